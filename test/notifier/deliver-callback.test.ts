import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { createGuardedHttp } from '../../services/core/net/guarded-http.ts';
import { deliverCallback } from '../../services/notifier/deliver-callback.ts';
import { signWebhook } from '../../services/notifier/sign-webhook.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

let server: TestServer;
const http = createGuardedHttp({ allowPrivateNetworks: true });
const options: {
  timeoutMs: number;
  secret: string | undefined;
  signal: AbortSignal;
  now: () => Date;
} = {
  timeoutMs: 2000,
  secret: SECRET,
  signal: new AbortController().signal,
  now: () => new Date(),
};
const attempt = (path: string, extra: Partial<typeof options> = {}) =>
  deliverCallback(
    http,
    {
      url: `${server.url}${path}`,
      webhookId: 'job-1:media.job.succeeded:1',
      body: { jobId: 'j', note: 'ünïcode' },
      attempt: 3,
    },
    { ...options, ...extra },
  );

describe('one callback attempt', () => {
  beforeEach(async () => {
    server = await startTestServer();
  });
  afterEach(() => server.close());

  describesSignsPerStandardWebhooksThe();

  describesTellsRetryableAnswers408429();

  describesAReceiverThatNeverAnswers();
});

function describesSignsPerStandardWebhooksThe(): void {
  it('signs per Standard Webhooks: the standardwebhooks package verifies it', async () => {
    expect(await attempt('/callbacks/a')).to.deep.equal({ kind: 'delivered', status: 200 });
    const got = server.callbacks[0];
    expect(got?.headers['webhook-id']).to.equal('job-1:media.job.succeeded:1');
    expect(got?.headers['x-media-delivery-attempt']).to.equal('3');
    const headers = {
      'webhook-id': String(got?.headers['webhook-id']),
      'webhook-timestamp': String(got?.headers['webhook-timestamp']),
      'webhook-signature': String(got?.headers['webhook-signature']),
    };
    expect(new Webhook(SECRET).verify(got?.raw ?? '', headers)).to.deep.equal({
      jobId: 'j',
      note: 'ünïcode',
    });
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(
        got?.raw ?? '',
        headers,
      ),
    ).to.throw();
    // The package's own signer agrees byte for byte.
    expect(signWebhook(SECRET, 'm1', 1_700_000_000, '{}')).to.equal(
      new Webhook(SECRET).sign('m1', new Date(1_700_000_000_000), '{}'),
    );
  });

  it('sends no signature without a secret', async () => {
    await attempt('/callbacks/a', { secret: undefined });
    expect(server.callbacks[0]?.headers).to.not.have.property('webhook-signature');
    expect(server.callbacks[0]?.headers).to.have.property('webhook-timestamp');
  });
}

function describesTellsRetryableAnswers408429(): void {
  it('tells retryable answers (408, 429, 5xx, with Retry-After) from permanent ones (other 4xx, 3xx)', async () => {
    const statuses: Record<string, [number, Record<string, string>]> = {
      '/r429': [429, { 'retry-after': '7' }],
      '/r503': [503, { 'retry-after': 'Wed, 21 Oct 2099 07:28:00 GMT' }],
      '/r408': [408, {}],
      '/p410': [410, {}],
      '/p302': [302, { location: '/x' }],
    };
    const plain: Server = createServer((req, res) => {
      const [status, headers] = statuses[req.url ?? ''] ?? [200, {}];
      res.writeHead(status, headers).end();
    });
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
    const now = new Date('2099-10-21T07:27:00Z');
    const one = (path: string) =>
      deliverCallback(
        http,
        { url: base + path, webhookId: 'w', body: {}, attempt: 1 },
        { ...options, now: () => now },
      );
    try {
      expect(await one('/r429')).to.deep.equal({
        kind: 'retryable',
        status: 429,
        error: 'answered 429',
        retryAfterMs: 7000,
      });
      expect(await one('/r503')).to.deep.equal({
        kind: 'retryable',
        status: 503,
        error: 'answered 503',
        retryAfterMs: 60_000,
      });
      expect(await one('/r408')).to.deep.equal({
        kind: 'retryable',
        status: 408,
        error: 'answered 408',
      });
      expect(await one('/p410')).to.deep.equal({
        kind: 'permanent',
        status: 410,
        error: 'answered 410',
      });
      expect(await one('/p302')).to.deep.equal({
        kind: 'permanent',
        status: 302,
        error: 'answered 302',
      });
    } finally {
      plain.closeAllConnections();
      plain.close();
    }
  });
}

function describesAReceiverThatNeverAnswers(): void {
  it('a receiver that never answers is abandoned after the time-out; a refused port is named, not its address', async () => {
    const silent: Server = createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    const started = performance.now();
    const hung = await deliverCallback(
      http,
      { url: `http://127.0.0.1:${port}/x`, webhookId: 'w', body: {}, attempt: 1 },
      { ...options, timeoutMs: 300 },
    );
    expect(hung).to.deep.equal({ kind: 'retryable', error: 'no answer within 300 ms' });
    expect(performance.now() - started).to.be.below(1500);
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
    expect(
      await deliverCallback(
        http,
        { url: `http://127.0.0.1:${port}/x`, webhookId: 'w', body: {}, attempt: 1 },
        options,
      ),
    ).to.deep.equal({ kind: 'retryable', error: 'connection refused' });
  });

  it('never calls a private address unless allowed, and does not retry it', async () => {
    const strict = createGuardedHttp({ allowPrivateNetworks: false });
    const result = await deliverCallback(
      strict,
      { url: `${server.url}/callbacks/a`, webhookId: 'w', body: {}, attempt: 1 },
      options,
    );
    expect(result.kind).to.equal('permanent');
    expect(server.callbacks).to.have.length(0);
  });
}
