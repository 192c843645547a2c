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
    .send({ ...validTranscode, failureUrl: 'https://hooks.example.com/fail' });
  const id = String(ack.body.id);
  const cancel = (key = KEY_A, jobId = id) =>
    request(ingress.server).post(`/jobs/${jobId}/cancel`).set('x-api-key', key);
  const cancels = () => decodeAll(bus.published.filter((r) => r.topic === topics.jobCancels));
  return { bus, ingress, id, cancel, cancels };
};

describe('POST /jobs/:id/cancel through the HTTP app', () => {
  describesQueuedJob202Cancel();

  describesJobHasEnded409();

  describesJobHasEndedCallback();
});

function describesQueuedJob202Cancel(): void {
  it('a queued job: 202, the cancel goes on the bus, and the status shows when it was asked for', async () => {
    const { ingress, id, cancel, cancels } = await setup();
    const res = await cancel();
    expect(res.status).to.equal(202);
    expect(res.body).to.include({ id, status: 'queued' });
    expect(Date.parse(res.body.cancelRequestedAt)).to.be.closeTo(Date.now(), 5000);
    const [event] = cancels();
    expect(event?.type).to.equal('media.job.cancel-requested');
    expect(event?.data).to.deep.equal({
      jobId: id,
      kind: 'transcode',
      orgId: 'org-a',
      requestedAt: res.body.cancelRequestedAt,
    });
    const status = await request(ingress.server).get(`/jobs/${id}`).set('x-api-key', KEY_A);
    expect(status.body.cancelRequestedAt).to.equal(res.body.cancelRequestedAt);
    // Asked again: the same answer, nothing more published.
    const again = await cancel();
    expect(again.status).to.equal(202);
    expect(again.body).to.deep.equal(res.body);
    expect(cancels()).to.have.length(1);
  });

  it("another organisation's job, an unknown id and a malformed id are 404, as for GET", async () => {
    const { cancel, cancels } = await setup();
    expect((await cancel(KEY_B)).status).to.equal(404);
    expect((await cancel(KEY_A, crypto.randomUUID())).status).to.equal(404);
    expect((await cancel(KEY_A, 'not-a-uuid')).status).to.equal(404);
    expect((await cancel('no-such-key-0123456789')).status).to.equal(401);
    expect(cancels()).to.have.length(0);
  });
}

function describesJobHasEnded409(): void {
  it('a job that has ended is 409; one the worker canceled shows status canceled and can have its callback redelivered', async () => {
    const { ingress, id, cancel } = await setup();
    expect((await cancel()).status).to.equal(202);
    const failed = codec.decode(
      codec.encode(topics.jobEvents, 'media.job.failed', {
        jobId: id,
        kind: 'transcode',
        orgId: 'org-a',
        attempt: 1,
        finishedAt: new Date().toISOString(),
        callbacks: { failureUrl: 'https://hooks.example.com/fail' },
        error: { code: 'canceled', message: 'the job was canceled', retryable: false },
      }),
    );
    if (!failed.ok) throw new Error(failed.reason);
    ingress.statusView.apply(failed.event);
    const status = await request(ingress.server).get(`/jobs/${id}`).set('x-api-key', KEY_A);
    expect(status.body.status).to.equal('canceled');
    expect(status.body.error.code).to.equal('canceled');
    const late = await cancel();
    expect(late.status).to.equal(409);
    expect(late.body.error).to.match(/already ended \(canceled\)/);
    const redeliver = await request(ingress.server)
      .post(`/jobs/${id}/callbacks/redeliver`)
      .set('x-api-key', KEY_A);
    expect(redeliver.status).to.equal(202);
  });
}

function describesJobHasEndedCallback(): void {
  it('a job that has ended with its callback retrying: 202, and the cancel goes on the bus to stop it', async () => {
    const { ingress, id, cancel, cancels } = await setup();
    const event = (type: 'media.job.failed' | 'media.callback.status', data: object) => {
      const decoded = codec.decode(codec.encode(topics.jobEvents, type, data as never));
      if (!decoded.ok) throw new Error(decoded.reason);
      ingress.statusView.apply(decoded.event);
    };
    const finishedAt = new Date(Date.now() - 60_000).toISOString();
    event('media.job.failed', {
      jobId: id,
      kind: 'transcode',
      orgId: 'org-a',
      attempt: 1,
      finishedAt,
      callbacks: { failureUrl: 'https://hooks.example.com/fail' },
      error: { code: 'input_not_found', message: 'gone', retryable: false },
    });
    // Still pending (not tried yet): nothing to stop, the job has ended.
    expect((await cancel()).status).to.equal(409);
    event('media.callback.status', {
      jobId: id,
      orgId: 'org-a',
      webhookId: `${id}:media.job.failed:1`,
      state: 'retrying',
      attempts: 3,
      lastError: 'connection refused',
      nextAttemptAt: new Date(Date.now() + 60_000).toISOString(),
      at: new Date().toISOString(),
    });
    const res = await cancel();
    expect(res.status).to.equal(202);
    expect(res.body).to.include({ id, status: 'failed' });
    expect(Date.parse(res.body.cancelRequestedAt)).to.be.above(Date.parse(finishedAt));
    expect(cancels().map((e) => e.data)).to.deep.equal([
      { jobId: id, kind: 'transcode', orgId: 'org-a', requestedAt: res.body.cancelRequestedAt },
    ]);
  });
}
