import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { createGuardedHttp } from '../../services/core/net/guarded-http.ts';
import { deliverCallback, signCallback } from '../../services/notifier/deliver-callback.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';

describe('callback delivery', () => {
  let server: TestServer;
  const http = createGuardedHttp({ allowPrivateNetworks: true });
  const policy = { maxAttempts: 3, backoffMs: 5, timeoutMs: 2000, signingSecret: 'whsec-test' };
  beforeEach(async () => {
    server = await startTestServer();
  });
  afterEach(() => server.close());

  it('signs the body so a receiver can verify it', async () => {
    const result = await deliverCallback(http, { url: `${server.url}/callbacks/a`, eventId: 'e1', body: { jobId: 'j' } }, policy, { signal: new AbortController().signal });
    expect(result).to.deep.include({ delivered: true, attempts: 1 });
    const got = server.callbacks[0];
    const [t, v1] = String(got?.headers['x-media-signature']).split(',').map((p) => p.split('=')[1]);
    const expected = createHmac('sha256', 'whsec-test').update(`${t}.${JSON.stringify({ jobId: 'j' })}`).digest('hex');
    expect(v1).to.equal(expected);
    expect(signCallback('s', 1, '{}')).to.match(/^t=1,v1=[0-9a-f]{64}$/);
    expect(got?.headers['x-media-event-id']).to.equal('e1');
  });

  it('retries a 5xx with the attempt number, and stops at a 2xx', async () => {
    server.callbackStatus.set('/callbacks/flaky', 503);
    setTimeout(() => server.callbackStatus.set('/callbacks/flaky', 200), 3);
    const result = await deliverCallback(http, { url: `${server.url}/callbacks/flaky`, eventId: 'e2', body: {} }, { ...policy, backoffMs: 20 }, { signal: new AbortController().signal });
    expect(result.delivered).to.equal(true);
    expect(server.callbacks.map((c) => c.headers['x-media-delivery-attempt'])).to.deep.equal(['1', '2']);
  });

  it('gives up at once on a permanent 4xx, and after maxAttempts on 5xx', async () => {
    server.callbackStatus.set('/callbacks/gone', 410);
    server.callbackStatus.set('/callbacks/down', 500);
    const gone = await deliverCallback(http, { url: `${server.url}/callbacks/gone`, eventId: 'e3', body: {} }, policy, { signal: new AbortController().signal });
    expect(gone).to.deep.equal({ delivered: false, attempts: 1, reason: 'answered 410' });
    const down = await deliverCallback(http, { url: `${server.url}/callbacks/down`, eventId: 'e4', body: {} }, policy, { signal: new AbortController().signal });
    expect(down).to.deep.equal({ delivered: false, attempts: 3, reason: 'answered 500' });
  });

  it('never calls a private address unless allowed', async () => {
    const strict = createGuardedHttp({ allowPrivateNetworks: false });
    const result = await deliverCallback(strict, { url: `${server.url}/callbacks/a`, eventId: 'e5', body: {} }, policy, { signal: new AbortController().signal });
    expect(result.delivered).to.equal(false);
    expect(result.attempts).to.equal(1);
    expect(server.callbacks).to.have.length(0);
  });
});
