import { expect } from 'chai';
import request from 'supertest';
import { createLogger } from '../../services/core/observability/logger.ts';
import { downBus, makeIngress, validTranscode } from './ingress-fixture.ts';

describe('ingress: request ids in answers and logs', () => {
  it('answers X-Request-Id (the caller’s own when plain, else a fresh one) and logs it with the job id', async () => {
    const lines: string[] = [];
    const { server } = await makeIngress({
      log: createLogger({ level: 'info', write: (l) => lines.push(l) }),
    });
    const own = await request(server)
      .post('/transcode')
      .set('x-request-id', 'caller-req.42')
      .send(validTranscode);
    expect(own.status).to.equal(200);
    expect(own.headers['x-request-id']).to.equal('caller-req.42');
    const queued = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(queued.find((r) => r['msg'] === 'job.queued')).to.include({
      requestId: 'caller-req.42',
      jobId: (own.body as { id: string }).id,
    });

    const made = await request(server)
      .post('/transcode')
      .set('x-request-id', 'not plain <script>')
      .send(validTranscode);
    expect(made.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
    const refused = await request(server).post('/transcode').send({ apiKey: 'nope' });
    expect(refused.status).to.equal(401);
    expect(refused.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
    expect(refused.headers['x-request-id']).to.not.equal(made.headers['x-request-id']);
  });

  it('an error line of a request names its request id', async () => {
    const lines: string[] = [];
    const { server } = await makeIngress({
      bus: downBus(),
      log: createLogger({ level: 'info', write: (l) => lines.push(l) }),
    });
    const res = await request(server)
      .post('/transcode')
      .set('x-request-id', 'r-503')
      .send(validTranscode);
    expect(res.status).to.equal(503);
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const notQueued = records.find((r) => r['msg'] === 'job.not_queued');
    expect(notQueued).to.include({ requestId: 'r-503' });
    expect(notQueued?.['jobId']).to.be.a('string');
  });
});
