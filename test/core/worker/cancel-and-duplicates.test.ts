import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';
import { BusUncertainError, topics, type EventBus } from '../../../services/core/bus/event-bus.ts';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';
import type { JobRequested } from '../../../services/core/contracts/types.generated.ts';
import { MediaError } from '../../../services/core/errors.ts';
import { createEventCodec, type JobEvent } from '../../../services/core/events/event-codec.ts';
import { cancelRecord } from '../../../services/core/status/job-cancels.ts';
import type { JobHandler } from '../../../services/core/worker/job-handler.ts';
import { startJobWorker } from '../../../services/core/worker/run-job-worker.ts';
import { createAddressPolicy } from '../../../services/core/net/address-policy.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';
import { createMetrics } from '../../../services/core/observability/metrics.ts';
import { systemClock } from '../../../services/core/time.ts';
import { observeJobEvents, jobResult } from '../../support/job-requests.ts';

const codec = createEventCodec(loadContracts(), 'test');
const result = jobResult('https://h.example.com/o.mp4');

function job(orgId = 'o'): JobRequested {
  return {
    jobId: randomUUID(),
    kind: 'transcode',
    orgId,
    attempt: 1,
    submittedAt: new Date().toISOString(),
    input: { url: 'https://h.example.com/in.mp4' },
    output: { url: 'https://h.example.com/o.mp4' },
    transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
    callbacks: { failureUrl: 'https://hooks.example.com/fail' },
  };
}

/** A worker (one slot) on an in-memory embedded bus, and the job events it publishes. */
async function worker(
  handler: JobHandler,
  bus: EventBus = createEmbeddedBus({ path: ':memory:' }),
) {
  const events: JobEvent[] = [];
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  await observeJobEvents(bus, codec, events);
  const subscription = await startJobWorker(
    {
      bus,
      codec,
      log: silentLogger,
      metrics,
      clock: systemClock,
      sealingKeys: [],
    },
    {
      kind: 'transcode',
      group: 'w',
      concurrency: 1,
      maxAttempts: 3,
      retryBackoffMs: 10,
      jobTimeoutMs: 10_000,
      progressIntervalMs: 0,
      admission: {
        addressPolicy: createAddressPolicy({ allowPrivateNetworks: false }),
        contracts: loadContracts(),
      },
      handler,
    },
  );
  const request = (j: JobRequested, eventId?: string) =>
    bus.publish([codec.encode(topics.transcodeRequests, 'media.job.requested', j, eventId)]);
  const cancel = (j: JobRequested, orgId = j.orgId) =>
    bus.publish([
      cancelRecord(codec, {
        jobId: j.jobId,
        kind: 'transcode',
        orgId,
        requestedAt: new Date().toISOString(),
      }),
    ]);
  const until = async (check: () => boolean, what: string): Promise<void> => {
    const end = Date.now() + 5000;
    while (!check()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const ended = (j: JobRequested) =>
    events.find(
      (e) =>
        (e.type === 'media.job.failed' || e.type === 'media.job.succeeded') &&
        e.data.jobId === j.jobId,
    );
  return { bus, events, request, cancel, until, ended, subscription, metrics };
}

describe('job worker: cancels and duplicate requests', () => {
  describesJobCanceledQueuedEnds();

  describesCancelJobRunsAborts();

  describesSecondRequestRecordJob();

  describesOutcomeBusDoesAcknowledge();

  describesRequestAttemptStatusTopic();
});

function describesJobCanceledQueuedEnds(): void {
  it('a job canceled while queued ends canceled without running, and is not retried', async () => {
    const ran: string[] = [];
    const w = await worker(async (j) => {
      ran.push(j.jobId);
      return result;
    });
    const queued = job();
    await w.cancel(queued);
    await w.request(queued);
    await w.until(() => w.ended(queued) !== undefined, 'the outcome');
    const outcome = w.ended(queued);
    expect(outcome?.type).to.equal('media.job.failed');
    if (outcome?.type !== 'media.job.failed') return;
    expect(outcome.data.error).to.deep.equal({
      code: 'canceled',
      message: 'the job was canceled before it started',
      retryable: false,
    });
    expect(outcome.data.callbacks?.failureUrl).to.equal('https://hooks.example.com/fail');
    expect(ran).to.deep.equal([]);
    expect(w.events.filter((e) => e.data.jobId === queued.jobId).map((e) => e.type)).to.deep.equal([
      'media.job.failed',
    ]);
    await w.bus.close();
  });
}

function describesCancelJobRunsAborts(): void {
  it('a cancel while the job runs aborts its signal with code canceled; the job ends canceled, once', async () => {
    let reason: unknown;
    const w = await worker(
      (_j, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.progress(10, 'encode');
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            // As run-ffmpeg does: the runner's own error; the worker reports the signal's reason.
            reject(new MediaError('interrupted', 'the job was stopped'));
          });
        }),
    );
    const running = job();
    await w.request(running);
    await w.until(() => w.events.some((e) => e.type === 'media.job.progress'), 'progress');
    await w.cancel(running);
    await w.until(() => w.ended(running) !== undefined, 'the outcome');
    expect(reason).to.be.instanceOf(MediaError);
    expect((reason as MediaError).code).to.equal('canceled');
    const outcome = w.ended(running);
    expect(outcome?.type === 'media.job.failed' && outcome.data.error.code).to.equal('canceled');
    await new Promise((r) => setTimeout(r, 100));
    expect(w.events.filter((e) => e.type === 'media.job.requested')).to.have.length(0);
    expect(w.events.filter((e) => e.type === 'media.job.failed')).to.have.length(1);
    // A cancel is the caller's choice: counted apart from failures, the attempt too.
    const text = await w.metrics.registry.metrics();
    expect(text).to.include(
      'media_jobs_finished_total{kind="transcode",outcome="canceled",code="canceled"} 1',
    );
    expect(text).not.to.match(/media_jobs_finished_total\{[^}]*outcome="failed"[^}]*\} [1-9]/);
    expect(text).to.include(
      'media_job_attempt_duration_seconds_count{kind="transcode",format="mp4",outcome="canceled"} 1',
    );
    await w.bus.close();
  });

  it('a cancel naming another organisation does not stop the job', async () => {
    const w = await worker(async () => result);
    const mine = job('org-1');
    await w.cancel(mine, 'org-2');
    await w.request(mine);
    await w.until(() => w.ended(mine) !== undefined, 'the outcome');
    expect(w.ended(mine)?.type).to.equal('media.job.succeeded');
    await w.bus.close();
  });
}

function describesSecondRequestRecordJob(): void {
  it('a second request record of the same job and attempt (another event id) is skipped as a duplicate', async () => {
    let runs = 0;
    const w = await worker(async () => {
      runs++;
      return result;
    });
    const twice = job();
    await w.request(twice, randomUUID());
    await w.request(twice, randomUUID());
    const after = job();
    await w.request(after);
    await w.until(() => w.ended(after) !== undefined, 'the job after');
    expect(runs).to.equal(2);
    expect(
      w.events.filter((e) => e.type === 'media.job.succeeded' && e.data.jobId === twice.jobId),
    ).to.have.length(1);
    await w.bus.close();
  });

  it('the same record delivered again to the same worker (its outcome could not be published) runs again', async () => {
    const real = createEmbeddedBus({ path: ':memory:', redeliveryDelayMs: 10 });
    let failOnce = true;
    const bus: EventBus = {
      ...real,
      publish: async (records) => {
        if (failOnce && records.some((r) => r.value.includes('media.job.succeeded'))) {
          failOnce = false;
          throw new Error('the bus refused the outcome');
        }
        await real.publish(records);
      },
    };
    let runs = 0;
    const w = await worker(async () => {
      runs++;
      return result;
    }, bus);
    const redelivered = job();
    await w.request(redelivered, 'one-event-id');
    await w.until(() => w.ended(redelivered) !== undefined, 'the outcome after the redelivery');
    expect(runs).to.equal(2);
    expect(w.ended(redelivered)?.type).to.equal('media.job.succeeded');
    await real.close();
  });
}

function describesOutcomeBusDoesAcknowledge(): void {
  it('an outcome the bus does not acknowledge is published again, the record kept: the job runs once', async () => {
    const real = createEmbeddedBus({ path: ':memory:', redeliveryDelayMs: 10 });
    let refusals = 2;
    const bus: EventBus = {
      ...real,
      publish: async (records) => {
        if (refusals > 0 && records.some((r) => r.value.includes('media.job.succeeded'))) {
          refusals--;
          throw new BusUncertainError('publish: no answer from Kafka in time');
        }
        await real.publish(records);
      },
    };
    let runs = 0;
    const w = await worker(async () => {
      runs++;
      return result;
    }, bus);
    const slow = job();
    await w.request(slow, 'the-one-record');
    await w.until(() => w.ended(slow) !== undefined, 'the outcome');
    // The record, committed once the outcome is out, is not delivered again.
    await new Promise((r) => setTimeout(r, 100));
    expect(runs).to.equal(1);
    expect(refusals).to.equal(0);
    expect(w.events.filter((e) => e.type === 'media.job.succeeded')).to.have.length(1);
    // The same record once more (its commit lost): the outcome exists, it does not run.
    await w.request(slow, 'the-one-record');
    await new Promise((r) => setTimeout(r, 100));
    expect(runs).to.equal(1);
    await real.close();
  });
}

function describesRequestAttemptStatusTopic(): void {
  it('a request of an attempt the status topic shows ended is not run by a worker that never saw it', async () => {
    const bus = createEmbeddedBus({ path: ':memory:' });
    const ended = job();
    const now = new Date().toISOString();
    // What the status writer wrote when the job succeeded elsewhere (or before a restart).
    await bus.publish([
      {
        topic: topics.jobStatus,
        key: ended.jobId,
        value: Buffer.from(
          JSON.stringify({
            id: ended.jobId,
            orgId: ended.orgId,
            type: 'transcode',
            status: 'succeeded',
            attempt: 1,
            createdAt: now,
            updatedAt: now,
            rev: 1,
          }),
        ),
      },
    ]);
    const ran: string[] = [];
    const w = await worker(async (j) => {
      ran.push(j.jobId);
      return result;
    }, bus);
    const other = job();
    // A duplicate record of the ended job (a submission retried after bus_uncertain), then a new job.
    await w.request(ended, 'the-duplicate');
    await w.request(other);
    await w.until(() => w.ended(other) !== undefined, 'the other job to end');
    expect(ran).to.deep.equal([other.jobId]);
    expect(w.events.filter((e) => e.data.jobId === ended.jobId)).to.deep.equal([]);
    await bus.close();
  });
}
