import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

// Only global unicast is reachable. ipaddr.js classifies every special-purpose range the IANA
// registries list (loopback, private, link-local where cloud metadata lives, carrier-grade
// NAT, benchmarking, documentation, multicast, reserved, 6to4, Teredo, ORCHID, ...), so the
// policy is an allow-list of one class rather than a hand-kept block list that misses ranges.

/** IPv4 address inside IPv6 forms that carry one and are routed to it. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = address.range();
  if (range === 'ipv4Mapped') return address.toIPv4Address();
  // NAT64 well-known prefix 64:ff9b::/96: the gateway forwards to the embedded address. The
  // local-use prefix 64:ff9b:1::/48 (same range name) points into an operator's own network.
  const parts = address.parts;
  if (
    range === 'rfc6052' &&
    parts[0] === 0x64 &&
    parts[1] === 0xff9b &&
    parts.slice(2, 6).every((p) => p === 0)
  )
    return ipaddr.fromByteArray(address.toByteArray().slice(12)) as ipaddr.IPv4;
  return undefined;
}

/**
 * An IPv6 address with a dotted IPv4 tail in hex groups: ipaddr.js reads any `::a.b.c.d` as
 * IPv4-mapped (`::ffff:a.b.c.d`), while the socket layer reads it as IPv4-compatible.
 */
function hexTail(address: string): string {
  return address.replace(
    /:(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/,
    (_m, a: string, b: string, c: string, d: string) => {
      const hex = (hi: string, lo: string): string => ((Number(hi) << 8) | Number(lo)).toString(16);
      return `:${hex(a, b)}:${hex(c, d)}`;
    },
  );
}

type AddressClass = 'public' | 'private' | 'metadata';

// Where clouds serve instance credentials: all of link-local (169.254.169.254 on AWS, GCP,
// Azure, Oracle; fe80::/10), AWS's IPv6 endpoint, Alibaba Cloud's (inside carrier-grade NAT).
const METADATA_ADDRESSES = ['fd00:ec2::254', '100.100.100.200'];
const METADATA_HOSTNAMES = new Set([
  'metadata.google.internal',
  'metadata',
  'instance-data.ec2.internal',
  'metadata.azure.internal',
]);

// Normalised once: classOf runs for every address every caller URL resolves to.
const METADATA_NORMALISED = new Set(
  METADATA_ADDRESSES.map((m) => ipaddr.parse(m).toNormalizedString()),
);

function classOf(address: ipaddr.IPv4 | ipaddr.IPv6): AddressClass {
  if (METADATA_NORMALISED.has(address.toNormalizedString())) return 'metadata';
  const range = address.range();
  if (range === 'linkLocal') return 'metadata';
  return range === 'unicast' ? 'public' : 'private';
}

/** An address as it is routed: IPv4 inside the IPv6 forms that carry one, else itself. */
function routed(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const family = isIP(address);
  if (family === 0) return undefined;
  const parsed = ipaddr.parse(family === 6 ? hexTail(address) : address);
  if (parsed.kind() === 'ipv4') return parsed;
  return embeddedIPv4(parsed as ipaddr.IPv6) ?? parsed;
}

function addressClass(address: string): AddressClass | undefined {
  const ip = routed(address);
  if (!ip) return undefined;
  // IPv4-compatible ::/96 (deprecated; some stacks still route it to the IPv4 address).
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)) {
    const v4 = ipaddr.fromByteArray((ip as ipaddr.IPv6).toByteArray().slice(12)) as ipaddr.IPv4;
    return classOf(v4) === 'metadata' ? 'metadata' : 'private';
  }
  return classOf(ip);
}

export interface AddressPolicyOptions {
  /**
   * Lets caller URLs reach loopback and private networks (a file server on one's own machine).
   * Never opens link-local and cloud metadata addresses: only `allowList` can name one of those.
   */
  allowPrivateNetworks: boolean;
  /** Addresses or CIDR ranges reached whatever their class (default none). */
  allowList?: readonly string[];
}

/** Which addresses and host names caller-given URLs may reach (the SSRF guard's rule). */
export interface AddressPolicy {
  /** Why this address may not be reached, or undefined when it may. */
  refusal(address: string): string | undefined;
  /** Why this URL host (a name or a literal address) may not be reached, or undefined. */
  hostRefusal(hostname: string): string | undefined;
}

export function createAddressPolicy(options: AddressPolicyOptions): AddressPolicy {
  const allowed = (options.allowList ?? []).map((entry) =>
    entry.includes('/')
      ? ipaddr.parseCIDR(entry)
      : ipaddr.parseCIDR(`${entry}/${isIP(entry) === 6 ? 128 : 32}`),
  );
  const inAllowList = (address: string): boolean => {
    const ip = routed(address);
    return (
      ip !== undefined &&
      allowed.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits))
    );
  };
  const refusal = (address: string): string | undefined => {
    if (inAllowList(address)) return undefined;
    const cls = addressClass(address);
    if (cls === undefined) return 'not an IP address';
    if (cls === 'metadata') return 'a link-local or cloud metadata address';
    if (cls === 'private' && !options.allowPrivateNetworks)
      return 'a loopback, private or reserved address';
    return undefined;
  };
  const hostRefusal = (hostname: string): string | undefined => {
    const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    if (isIP(bare)) return refusal(bare);
    const name = bare.toLowerCase().replace(/\.$/, '');
    if (METADATA_HOSTNAMES.has(name)) return 'a cloud metadata host name';
    if ((name === 'localhost' || name.endsWith('.localhost')) && !options.allowPrivateNetworks)
      return 'a name of this machine';
    return undefined;
  };
  // The answer for a host is fixed by the options: the hosts seen last are remembered, since
  // one caller's submissions name the same few hosts again and again (the address parsing is
  // about a twentieth of a submission's cost). Bounded, and emptied whole when full.
  const answers = new Map<string, string | null>();
  return {
    refusal,
    hostRefusal(hostname) {
      const known = answers.get(hostname);
      if (known !== undefined) return known ?? undefined;
      const answer = hostRefusal(hostname);
      if (answers.size >= HOST_ANSWERS_KEPT) answers.clear();
      answers.set(hostname, answer ?? null);
      return answer;
    },
  };
}

/** Host names whose answer a policy remembers. */
const HOST_ANSWERS_KEPT = 4096;

/** Validates an allow-list entry (an address or a CIDR range) for the configuration. */
export function isAddressOrRange(entry: string): boolean {
  return ipaddr.isValidCIDR(entry) ? isIP(entry.split('/')[0] ?? '') !== 0 : isIP(entry) !== 0;
}

const strict = createAddressPolicy({ allowPrivateNetworks: false });

/** True when a caller-given URL must not reach this address under the default policy. */
export function isForbiddenAddress(address: string): boolean {
  return strict.refusal(address) !== undefined;
}

/** Hostnames that name this machine, or a metadata service, whatever DNS says. */
export function isLocalHostname(hostname: string): boolean {
  return !isIP(hostname) && strict.hostRefusal(hostname) !== undefined;
}

/** A literal IP in a URL host, without IPv6 brackets; undefined for names. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}
