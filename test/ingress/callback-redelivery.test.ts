import { expect } from 'chai';
import request from 'supertest';
import { topics } from '../../services/core/bus/event-bus.ts';
import { codec, decodeAll, recordingBus } from '../notifier/notifier-fixture.ts';
import { KEY_A, KEY_B, makeIngress, validTranscode } from './ingress-fixture.ts';

const setup = async () => {
  const bus = recordingBus();
  const ingress = await makeIngress({ bus });
  const ack = await request(ingress.server)
    .post('/transcode')
    .send({ ...validTranscode, successUrl: 'https://hooks.example.com/ok' });
  expect(ack.status).to.equal(200);
  const id = String(ack.body.id);
  const apply = (
    type: 'media.job.succeeded' | 'media.callback.status',
    data: Record<string, unknown>,
  ) => {
    const decoded = codec.decode(codec.encode(topics.jobEvents, type, data as never));
    if (!decoded.ok) throw new Error(decoded.reason);
    ingress.statusView.apply(decoded.event);
  };
  return { bus, ingress, id, apply };
};
const result = {
  outputUrl: 'https://media.example.com/out.mp4',
  format: 'mp4',
  width: 320,
  height: 240,
  durationSeconds: 2,
  sizeBytes: 1000,
};
const finish = (apply: Awaited<ReturnType<typeof setup>>['apply'], id: string) =>
  apply('media.job.succeeded', {
    jobId: id,
    kind: 'transcode',
    orgId: 'org-a',
    attempt: 1,
    finishedAt: '2026-03-01T12:00:00.000Z',
    callbacks: { successUrl: 'https://hooks.example.com/ok' },
    result,
  });

describe('callback status and redelivery over HTTP', () => {
  describesGETJobsIdShows();

  describesPOSTJobsIdCallbacks();

  describesAnotherOrganisationUnknownIds();
});

function describesGETJobsIdShows(): void {
  it('GET /jobs/:id shows the callback: pending, then each attempt the notifier reports', async () => {
    const { ingress, id, apply } = await setup();
    finish(apply, id);
    const webhookId = `${id}:media.job.succeeded:1`;
    let status = await request(ingress.server).get(`/jobs/${id}`).set('x-api-key', KEY_A);
    expect(status.body.callback).to.deep.equal({ state: 'pending', webhookId, attempts: 0 });
    apply('media.callback.status', {
      jobId: id,
      orgId: 'org-a',
      webhookId,
      state: 'retrying',
      attempts: 2,
      lastStatus: 503,
      lastError: 'answered 503',
      nextAttemptAt: '2026-03-01T12:00:04.000Z',
      at: '2026-03-01T12:00:01.000Z',
    });
    status = await request(ingress.server)
      .get(`/jobs/${id}`)
      .set('authorization', `Bearer ${KEY_A}`);
    expect(status.body.callback).to.deep.equal({
      state: 'retrying',
      webhookId,
      attempts: 2,
      lastStatus: 503,
      lastError: 'answered 503',
      nextAttemptAt: '2026-03-01T12:00:04.000Z',
    });
    apply('media.callback.status', {
      jobId: id,
      orgId: 'org-a',
      webhookId,
      state: 'delivered',
      attempts: 3,
      lastStatus: 200,
      at: '2026-03-01T12:00:05.000Z',
    });
    status = await request(ingress.server).get(`/jobs/${id}`).set('x-api-key', KEY_A);
    expect(status.body.callback).to.deep.equal({
      state: 'delivered',
      webhookId,
      attempts: 3,
      lastStatus: 200,
    });
    expect(status.body).to.not.have.property('finalCallback');
  });
}

function describesPOSTJobsIdCallbacks(): void {
  it('POST /jobs/:id/callbacks/redeliver queues the same callback with the same webhook-id', async () => {
    const { bus, ingress, id, apply } = await setup();
    finish(apply, id);
    const res = await request(ingress.server)
      .post(`/jobs/${id}/callbacks/redeliver`)
      .set('x-api-key', KEY_A);
    expect(res.status).to.equal(202);
    expect(res.body).to.deep.equal({
      id,
      webhookId: `${id}:media.job.succeeded:1`,
      state: 'pending',
    });
    const queued = bus.published.filter((r) => r.topic === topics.callbacks);
    expect(queued).to.have.length(1);
    const [delivery] = decodeAll(queued);
    expect(delivery?.data).to.deep.equal({
      webhookId: `${id}:media.job.succeeded:1`,
      jobId: id,
      orgId: 'org-a',
      url: 'https://hooks.example.com/ok',
      attempt: 1,
      body: {
        eventId: `${id}:media.job.succeeded:1`,
        jobId: id,
        kind: 'transcode',
        status: 'succeeded',
        attempt: 1,
        finishedAt: '2026-03-01T12:00:00.000Z',
        result,
      },
    });
  });
}

function describesAnotherOrganisationUnknownIds(): void {
  it('another organisation and unknown ids get 404; an unfinished job 409; no key 401', async () => {
    const { ingress, id } = await setup();
    expect(
      (
        await request(ingress.server)
          .post(`/jobs/${id}/callbacks/redeliver`)
          .set('x-api-key', KEY_B)
      ).status,
    ).to.equal(404);
    expect(
      (
        await request(ingress.server)
          .post('/jobs/6f1c2e0a-0000-4000-8000-000000000009/callbacks/redeliver')
          .set('x-api-key', KEY_A)
      ).status,
    ).to.equal(404);
    expect((await request(ingress.server).post(`/jobs/${id}/callbacks/redeliver`)).status).to.equal(
      401,
    );
    const early = await request(ingress.server)
      .post(`/jobs/${id}/callbacks/redeliver`)
      .set('x-api-key', KEY_A);
    expect(early.status).to.equal(409);
    expect(early.body.error).to.match(/queued/);
  });

  it('a finished job that asked for no callback answers 409', async () => {
    const bus = recordingBus();
    const ingress = await makeIngress({ bus });
    const ack = await request(ingress.server).post('/transcode').send(validTranscode);
    const id = String(ack.body.id);
    const decoded = codec.decode(
      codec.encode(topics.jobEvents, 'media.job.succeeded', {
        jobId: id,
        kind: 'transcode',
        orgId: 'org-a',
        attempt: 1,
        finishedAt: '2026-03-01T12:00:00.000Z',
        result: result as never,
      }),
    );
    if (!decoded.ok) throw new Error(decoded.reason);
    ingress.statusView.apply(decoded.event);
    const res = await request(ingress.server)
      .post(`/jobs/${id}/callbacks/redeliver`)
      .set('x-api-key', KEY_A);
    expect(res.status).to.equal(409);
    expect(res.body.error).to.match(/successUrl/);
    expect(
      (await request(ingress.server).get(`/jobs/${id}`).set('x-api-key', KEY_A)).body,
    ).to.not.have.property('callback');
  });
}
