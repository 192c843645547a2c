import { expect } from 'chai';
import request from 'supertest';
import { topics } from '../../services/core/bus/event-bus.ts';
import { createRateLimiter } from '../../services/ingress/rate-limit.ts';
import { codec, recordingBus } from '../notifier/notifier-fixture.ts';
import { KEY_A, KEY_B, makeIngress, validTranscode } from './ingress-fixture.ts';

describe('request rate per API key and active jobs per organisation, through the HTTP app', () => {
  it('a key over its burst gets 429 with Retry-After and {error}; another key is not held back', async () => {
    const ingress = await makeIngress({
      bus: recordingBus(),
      limits: { ratePerSecond: 1, rateBurst: 3 },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await request(ingress.server).post('/transcode').send(validTranscode)).status);
    // GET counts against the same key's bucket.
    const limited = await request(ingress.server)
      .get(`/jobs/${crypto.randomUUID()}`)
      .set('x-api-key', KEY_A);
    expect(statuses).to.deep.equal([200, 200, 200]);
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers['retry-after'])).to.be.within(1, 2);
    expect(Object.keys(limited.body)).to.deep.equal(['error']);
    const other = await request(ingress.server)
      .post('/transcode')
      .send({ ...validTranscode, apiKey: KEY_B });
    expect(other.status).to.equal(200);
  });

  it('the bucket refills at the configured rate (token bucket)', () => {
    let t = 0;
    const limit = createRateLimiter({ ratePerSecond: 2, rateBurst: 2 }, () => t);
    const headers: Record<string, string> = {};
    const ctx = { set: (k: string, v: string) => void (headers[k] = v) } as never;
    limit('k', ctx);
    limit('k', ctx);
    expect(() => limit('k', ctx)).to.throw(/2 requests per second/);
    expect(headers['Retry-After']).to.equal('1');
    t += 500; // one token back
    limit('k', ctx);
    expect(() => limit('k', ctx)).to.throw();
    t += 10_000; // never more than the burst
    limit('k', ctx);
    limit('k', ctx);
    expect(() => limit('k', ctx)).to.throw();
  });

  it('an organisation at its cap of queued and running jobs gets 429; an ended job frees a place', async () => {
    const ingress = await makeIngress({
      bus: recordingBus(),
      limits: { maxActiveJobsPerOrg: 2 },
    });
    const submit = (apiKey = KEY_A) =>
      request(ingress.server)
        .post('/transcode')
        .send({ ...validTranscode, apiKey });
    const first = await submit();
    const second = await submit();
    expect([first.status, second.status]).to.deep.equal([200, 200]);
    const refused = await submit();
    expect(refused.status).to.equal(429);
    expect(refused.headers['retry-after']).to.match(/^\d+$/);
    expect(refused.body.error).to.match(/2 jobs queued or running/);
    expect((await submit(KEY_B)).status, 'another organisation').to.equal(200);

    // The first job starts (still counted), then fails: its place is free again.
    const apply = (type: 'media.job.processing' | 'media.job.failed', data: object) => {
      const decoded = codec.decode(codec.encode(topics.jobEvents, type, data as never));
      if (!decoded.ok) throw new Error(decoded.reason);
      ingress.statusView.apply(decoded.event);
    };
    const who = { jobId: first.body.id, kind: 'transcode', orgId: 'org-a', attempt: 1 };
    apply('media.job.processing', { ...who, startedAt: new Date().toISOString() });
    expect((await submit()).status).to.equal(429);
    apply('media.job.failed', {
      ...who,
      finishedAt: new Date().toISOString(),
      error: { code: 'input_not_found', message: 'gone', retryable: false },
    });
    expect((await submit()).status).to.equal(200);
  });

  it('an idempotent repeat is answered even at the cap (it is no new job)', async () => {
    const ingress = await makeIngress({ bus: recordingBus(), limits: { maxActiveJobsPerOrg: 1 } });
    const send = () =>
      request(ingress.server).post('/transcode').set('Idempotency-Key', 'k1').send(validTranscode);
    const first = await send();
    const again = await send();
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.equal(first.body);
  });
});
