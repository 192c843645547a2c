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

/** True when a caller-given URL must not reach this address (SSRF guard). */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  const parsed = ipaddr.parse(family === 6 ? hexTail(address) : address);
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  const v4 = embeddedIPv4(v6);
  if (v4) return v4.range() !== 'unicast';
  // IPv4-compatible ::/96 (deprecated; some stacks still route it to the IPv4 address).
  if (v6.parts.slice(0, 6).every((p) => p === 0)) return true;
  return v6.range() !== 'unicast';
}

/** Hostnames that name this machine whatever DNS says. */
export function isLocalHostname(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === 'metadata.google.internal';
}

/** A literal IP in a URL host, without IPv6 brackets; undefined for names. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}
