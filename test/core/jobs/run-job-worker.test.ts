import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';
import { topics, type EventBus } from '../../../services/core/bus/event-bus.ts';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';
import type { JobRequested } from '../../../services/core/contracts/types.generated.ts';
import { seal } from '../../../services/core/crypto/secret-box.ts';
import { MediaError } from '../../../services/core/errors.ts';
import { createEventCodec, type EventCodec, type JobEvent } from '../../../services/core/events/event-codec.ts';
import { startJobWorker, type JobHandler } from '../../../services/core/jobs/run-job-worker.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';
import { createMetrics } from '../../../services/core/observability/metrics.ts';
import { systemClock } from '../../../services/core/time.ts';

const key = { id: 'k', key: Buffer.alloc(32, 3) };
const result = { outputUrl: 'https://h.example.com/o.mp4', format: 'mp4' as const, width: 2, height: 2, durationSeconds: 1, sizeBytes: 10 };

function job(n: number, extra: Partial<JobRequested> = {}): JobRequested {
  const jobId = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  return {
    jobId, kind: 'transcode', orgId: 'o', attempt: 1, submittedAt: new Date().toISOString(),
    input: { url: 's3://bucket-1/in.mp4', creds: seal({ secret: 'shh' }, key, jobId) }, output: { url: 'https://h.example.com/o.mp4' },
    transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' }, ...extra,
  };
}

async function harness(handler: JobHandler, maxAttempts = 3) {
  const bus: EventBus = createEmbeddedBus({ path: ':memory:', redeliveryDelayMs: 10 });
  const codec: EventCodec = createEventCodec(loadContracts(), 'test');
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const events: JobEvent[] = [];
  const dead: string[] = [];
  await bus.subscribe({ group: 'observer', topics: [topics.jobEvents], fromBeginning: true, handler: async (r) => {
    const d = codec.decode(r);
    if (d.ok) events.push(d.event);
  } });
  await bus.subscribe({ group: 'dlq', topics: [topics.deadLetter], fromBeginning: true, handler: async (r) => void dead.push(r.value.toString()) });
  await startJobWorker({ bus, codec, log: silentLogger, metrics, clock: systemClock, sealingKeys: [key] }, { kind: 'transcode', group: 'w', concurrency: 1, maxAttempts, retryBackoffMs: 10, jobTimeoutMs: 2000, progressIntervalMs: 0, handler });
  const submit = (j: JobRequested): Promise<void> => bus.publish([codec.encode(topics.transcodeRequests, 'media.job.requested', j)]);
  const until = async (check: () => boolean): Promise<void> => {
    const end = Date.now() + 5000;
    while (!check()) {
      if (Date.now() > end) throw new Error(`timed out; events: ${events.map((e) => e.type).join(',')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { bus, codec, events, dead, metrics, submit, until };
}

describe('job worker loop', () => {
  it('publishes processing, progress and exactly one succeeded event; opens sealed credentials', async () => {
    let opened: unknown;
    const h = await harness(async (j, ctx) => {
      opened = ctx.openSecret(j.input.creds);
      ctx.progress(50, 'encode');
      return result;
    });
    await h.submit(job(1));
    await h.until(() => h.events.some((e) => e.type === 'media.job.succeeded'));
    await new Promise((r) => setTimeout(r, 50));
    expect(h.events.map((e) => e.type)).to.deep.equal(['media.job.processing', 'media.job.progress', 'media.job.succeeded']);
    expect(opened).to.deep.equal({ secret: 'shh' });
    expect(h.events[2]?.id).to.equal(`${job(1).jobId}:media.job.succeeded:1`);
    await h.bus.close();
  });

  it('retries a retryable failure with the attempt count, then succeeds', async () => {
    const attempts: number[] = [];
    const h = await harness(async (_j, ctx) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt < 3) throw new MediaError('input_unreachable', 'flaky');
      return result;
    });
    await h.submit(job(2));
    await h.until(() => h.events.some((e) => e.type === 'media.job.succeeded'));
    expect(attempts).to.deep.equal([1, 2, 3]);
    expect(h.events.filter((e) => e.type === 'media.job.failed')).to.have.length(0);
    await h.bus.close();
  });

  it('fails at once on a non-retryable error, and after the last attempt on a retryable one', async () => {
    const h = await harness(async (j) => {
      if (j.jobId.endsWith('3')) throw new MediaError('input_not_found', 'gone');
      throw new MediaError('input_unreachable', 'still down');
    }, 2);
    await h.submit(job(3));
    await h.submit(job(4));
    await h.until(() => h.events.filter((e) => e.type === 'media.job.failed').length === 2);
    const failed = h.events.filter((e) => e.type === 'media.job.failed').map((e) => e.data as { jobId: string; attempt: number; error: { code: string } });
    expect(failed.find((f) => f.jobId.endsWith('3'))).to.deep.include({ attempt: 1 });
    expect(failed.find((f) => f.jobId.endsWith('4'))).to.deep.include({ attempt: 2 });
    expect(failed.find((f) => f.jobId.endsWith('4'))?.error.code).to.equal('input_unreachable');
    await h.bus.close();
  });

  it('reports an unexpected exception as internal without its message', async () => {
    const h = await harness(async () => {
      throw new Error('/tmp/secret/path exploded');
    });
    await h.submit(job(5));
    await h.until(() => h.events.some((e) => e.type === 'media.job.failed'));
    const failed = h.events.find((e) => e.type === 'media.job.failed');
    expect(failed?.data).to.deep.include({ error: { code: 'internal', message: 'internal error', retryable: false } });
  });

  it('dead-letters a poison record and still runs the next good job', async () => {
    const h = await harness(async () => result);
    await h.bus.publish([{ topic: topics.transcodeRequests, key: 'x', value: Buffer.from('{not json') }]);
    const bad = h.codec.encode(topics.transcodeRequests, 'media.job.requested', job(6));
    const tampered = JSON.parse(bad.value.toString()) as { data: { transcode: { encoder: string } } };
    tampered.data.transcode.encoder = 'av1';
    await h.bus.publish([{ ...bad, value: Buffer.from(JSON.stringify(tampered)) }]);
    await h.submit(job(7));
    await h.until(() => h.events.some((e) => e.type === 'media.job.succeeded'));
    await h.until(() => h.dead.length === 2);
    expect(JSON.parse(h.dead[0] ?? '{}')).to.include({ reason: 'invalid_event', detail: 'value is not JSON', sourceTopic: topics.transcodeRequests });
    expect(JSON.parse(h.dead[1] ?? '{}').detail).to.match(/transcode\.encoder/);
    await h.bus.close();
  });
});
