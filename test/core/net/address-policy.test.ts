import { expect } from 'chai';
import { once } from 'node:events';
import { lookup } from 'node:dns';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createAddressPolicy,
  isForbiddenAddress,
  isLocalHostname,
  literalAddress,
} from '../../../services/core/net/address-policy.ts';
import { createGuardedHttp } from '../../../services/core/net/guarded-http.ts';

const open = createAddressPolicy({ allowPrivateNetworks: true });

describe('address policy (SSRF guard)', () => {
  const forbidden = [
    '127.0.0.1',
    '127.8.9.1',
    '10.0.0.1',
    '172.16.5.4',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    'fc00::5',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a00:1',
    'not-an-ip',
    // IPv4-compatible, 6to4, local-use NAT64, Teredo, documentation, benchmarking, site-local.
    '::7f00:1',
    '::a9fe:a9fe',
    '::8.8.8.8',
    '2002:7f00:1::1',
    '2002:808:808::1',
    '64:ff9b:1::a00:1',
    '64:ff9b:1::808:808',
    '2001::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '2001:db8::1',
    '2001:2::1',
    'fec0::1',
    '198.18.0.1',
    '192.0.2.1',
    '255.255.255.255',
  ];
  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '192.169.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2a00:1450:4001:80b::200e',
  ];
  for (const a of forbidden) it(`refuses ${a}`, () => expect(isForbiddenAddress(a)).to.equal(true));
  for (const a of allowed) it(`allows ${a}`, () => expect(isForbiddenAddress(a)).to.equal(false));

  describesTreatsLocalhostNamesLocal();

  describesALLOWPRIVATENETWORKSTrue();
});

function describesTreatsLocalhostNamesLocal(): void {
  it('treats localhost names as local and reads bracketed IPv6 literals', () => {
    expect(isLocalHostname('localhost')).to.equal(true);
    expect(isLocalHostname('api.LOCALHOST.')).to.equal(true);
    expect(isLocalHostname('metadata.google.internal')).to.equal(true);
    expect(isLocalHostname('example.com')).to.equal(false);
    expect(literalAddress('[::1]')).to.equal('::1');
    expect(literalAddress('example.com')).to.equal(undefined);
  });

  it('refuses to connect to a name that resolves to loopback, unless private networks are allowed', async () => {
    const guarded = createGuardedHttp({ allowPrivateNetworks: false });
    let error: unknown;
    try {
      await guarded.request('http://127.0.0.1:9/x', { method: 'GET' });
    } catch (e) {
      error = e;
    }
    expect((error as Error).name).to.equal('ForbiddenUrlError');
    // A public-looking name whose DNS answer is the metadata address is refused at connect time.
    const rebinding = createGuardedHttp({
      allowPrivateNetworks: false,
      resolve: (_h, cb) =>
        cb(null, [
          { address: '8.8.8.8', family: 4 },
          { address: '169.254.169.254', family: 4 },
        ]),
    });
    const viaDns = await rebinding
      .request('http://media.example.com:9/x', { method: 'GET' })
      .catch((e: Error) => e);
    expect((viaDns as Error).name).to.equal('ForbiddenUrlError');
    const open = createGuardedHttp({ allowPrivateNetworks: true });
    const refused = await open
      .request('http://127.0.0.1:9/x', { method: 'GET' })
      .catch((e: Error) => e);
    expect((refused as NodeJS.ErrnoException).code).to.equal('ECONNREFUSED');
  });
}

function describesALLOWPRIVATENETWORKSTrue(): void {
  describe('with ALLOW_PRIVATE_NETWORKS=true', () => {
    const metadata = [
      '169.254.169.254',
      '169.254.0.1',
      'fe80::1',
      'fd00:ec2::254',
      '100.100.100.200',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe',
      '::169.254.169.254',
    ];
    for (const a of metadata)
      it(`still refuses the link-local / metadata address ${a}`, () =>
        expect(open.refusal(a)).to.match(/link-local or cloud metadata/));
    for (const a of ['127.0.0.1', '10.0.0.7', '192.168.1.20', '::1', 'fd12::5', '8.8.8.8'])
      it(`reaches ${a}`, () => expect(open.refusal(a)).to.equal(undefined));
    describesStillRefusesMetadataHost();

    describesRedirectAllowedPrivateFile();
  });
}

function describesStillRefusesMetadataHost(): void {
  it('still refuses metadata host names, and reaches localhost', () => {
    expect(open.hostRefusal('metadata.google.internal')).to.match(/metadata/);
    expect(open.hostRefusal('[fe80::1]')).to.match(/link-local/);
    expect(open.hostRefusal('localhost')).to.equal(undefined);
  });
  it('answers a host the same when asked again, past the hosts it remembers', () => {
    const closed = createAddressPolicy({ allowPrivateNetworks: false });
    const asked = ['10.0.0.7', 'localhost', 'media.example.com', '[::1]', '169.254.169.254'];
    const first = asked.map((h) => closed.hostRefusal(h));
    expect(first[0]).to.match(/private/);
    expect(first[1]).to.match(/name of this machine/);
    expect(first[2]).to.equal(undefined);
    for (let i = 0; i < 10_000; i++) closed.hostRefusal(`host-${i}.example.com`);
    for (let round = 0; round < 2; round++)
      expect(asked.map((h) => closed.hostRefusal(h))).to.deep.equal(first);
  });
  it('an explicit allow-list opens exactly what it names', () => {
    const listed = createAddressPolicy({
      allowPrivateNetworks: false,
      allowList: ['169.254.10.5', '10.1.0.0/16'],
    });
    expect(listed.refusal('169.254.10.5')).to.equal(undefined);
    expect(listed.refusal('169.254.169.254')).to.match(/metadata/);
    expect(listed.refusal('10.1.200.3')).to.equal(undefined);
    expect(listed.refusal('10.2.0.1')).to.match(/private/);
  });
}

function describesRedirectAllowedPrivateFile(): void {
  it('a redirect from an allowed private file server to the metadata address is refused, by literal or by name', async () => {
    const server = createServer((req, res) => {
      const to =
        req.url === '/by-name'
          ? 'http://instance.example.com/latest/meta-data/'
          : 'http://169.254.169.254/latest/meta-data/';
      res.writeHead(302, { location: to }).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const resolved: string[] = [];
    const client = createGuardedHttp({
      allowPrivateNetworks: true,
      // The name answers with the metadata address; the lookup is refused before any socket opens.
      resolve: (hostname, cb) => {
        resolved.push(hostname);
        if (hostname === 'instance.example.com')
          return cb(null, [{ address: '169.254.169.254', family: 4 }]);
        lookup(hostname, { all: true }, (e, list) => cb(e, list ?? []));
      },
    });
    try {
      for (const path of ['/by-literal', '/by-name']) {
        const error = await client
          .request(`http://127.0.0.1:${port}${path}`, { method: 'GET' })
          .then(
            () => undefined,
            (e: Error) => e,
          );
        expect(error?.name, path).to.equal('ForbiddenUrlError');
        expect(error?.message).to.match(/link-local or cloud metadata/);
      }
      expect(resolved).to.include('instance.example.com');
    } finally {
      server.close();
    }
  });
}
