import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';
import { topics, type EventBus } from '../../../services/core/bus/event-bus.ts';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';
import type { JobRequested } from '../../../services/core/contracts/types.generated.ts';
import { seal } from '../../../services/core/crypto/secret-box.ts';
import { MediaError } from '../../../services/core/errors.ts';
import {
  createEventCodec,
  type EventCodec,
  type JobEvent,
} from '../../../services/core/events/event-codec.ts';
import type { JobHandler } from '../../../services/core/worker/job-handler.ts';
import { retryDelayMs } from '../../../services/core/worker/publish-outcome.ts';
import { startJobWorker } from '../../../services/core/worker/run-job-worker.ts';
import { createJobStatusView } from '../../../services/core/status/job-status-view.ts';
import { createAddressPolicy } from '../../../services/core/net/address-policy.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';
import { createMetrics } from '../../../services/core/observability/metrics.ts';
import { systemClock } from '../../../services/core/time.ts';
import { observeJobEvents, jobResult } from '../../support/job-requests.ts';

const key = { id: 'k', key: Buffer.alloc(32, 3) };
const awsCreds = { region: 'eu-west-1', accessKeyId: 'AKIA-TEST', secretAccessKey: 'shh' };
const result = jobResult('https://h.example.com/o.mp4');

function job(n: number, extra: Partial<JobRequested> = {}): JobRequested {
  const jobId = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  return {
    jobId,
    kind: 'transcode',
    orgId: 'o',
    attempt: 1,
    submittedAt: new Date().toISOString(),
    input: { url: 's3://bucket-1/in.mp4', creds: seal(awsCreds, key, jobId) },
    output: { url: 'https://h.example.com/o.mp4' },
    transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
    ...extra,
  };
}

interface HarnessOptions {
  retryBackoffMs?: number;
  random?: () => number;
  /** Wraps the bus the worker publishes on (the observers read the real one). */
  wrapBus?: (bus: EventBus) => EventBus;
  knownOrgs?: ReadonlySet<string>;
}

async function harness(handler: JobHandler, maxAttempts = 3, extra: HarnessOptions = {}) {
  const bus: EventBus = createEmbeddedBus({ path: ':memory:', redeliveryDelayMs: 10 });
  const codec: EventCodec = createEventCodec(loadContracts(), 'test');
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const events: JobEvent[] = [];
  const dead: string[] = [];
  await observeJobEvents(bus, codec, events);
  await bus.subscribe({
    group: 'dlq',
    topics: [topics.deadLetter],
    fromBeginning: true,
    handler: async (r) => void dead.push(r.value.toString()),
  });
  const workerBus = extra.wrapBus?.(bus) ?? bus;
  await startJobWorker(
    {
      bus: workerBus,
      codec,
      log: silentLogger,
      metrics,
      clock: systemClock,
      sealingKeys: [key],
      ...(extra.random ? { random: extra.random } : {}),
    },
    {
      kind: 'transcode',
      group: 'w',
      concurrency: 1,
      maxAttempts,
      retryBackoffMs: extra.retryBackoffMs ?? 10,
      jobTimeoutMs: 2000,
      progressIntervalMs: 0,
      admission: {
        addressPolicy: createAddressPolicy({ allowPrivateNetworks: false }),
        contracts: loadContracts(),
        ...(extra.knownOrgs ? { knownOrgs: extra.knownOrgs } : {}),
      },
      handler,
    },
  );
  const submit = (j: JobRequested): Promise<void> =>
    bus.publish([codec.encode(topics.transcodeRequests, 'media.job.requested', j)]);
  const until = async (check: () => boolean): Promise<void> => {
    const end = Date.now() + 5000;
    while (!check()) {
      if (Date.now() > end)
        throw new Error(`timed out; events: ${events.map((e) => e.type).join(',')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { bus, codec, events, dead, metrics, submit, until };
}

const refusedWith = async (j: JobRequested, extra: HarnessOptions = {}) => {
  let ran = false;
  const h = await harness(
    async () => {
      ran = true;
      return result;
    },
    3,
    extra,
  );
  await h.submit(j);
  await h.until(() => h.dead.length === 1 && h.events.some((e) => e.type === 'media.job.failed'));
  const failed = h.events.find((e) => e.type === 'media.job.failed');
  const dead = JSON.parse(h.dead[0] ?? '{}') as { reason: string; detail: string };
  await h.bus.close();
  expect(ran, 'the handler ran').to.equal(false);
  expect(failed?.data).to.deep.include({ jobId: j.jobId, orgId: j.orgId, attempt: 1 });
  return {
    failed: failed?.data as {
      error: { code: string; message: string };
      callbacks?: { failureUrl?: string };
    },
    dead,
  };
};
const failureUrl = 'https://hooks.example.com/fail';

describe('job worker loop', () => {
  describesPublishesProcessingProgressExactly();

  describesJobWaitingRetryShows();

  describesRetryScheduled20S();

  describesPublishesOutcomePromptlyHowever();

  describesReportsUnexpectedExceptionInternal();

  describesJobRequestsProducedStraight();
});

function describesPublishesProcessingProgressExactly(): void {
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
    expect(h.events.map((e) => e.type)).to.deep.equal([
      'media.job.processing',
      'media.job.progress',
      'media.job.succeeded',
    ]);
    expect(opened).to.deep.equal(awsCreds);
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
    // Attempts and jobs are counted apart: three attempts, two retried, one job that succeeded.
    await new Promise((r) => setTimeout(r, 50));
    const text = await h.metrics.registry.metrics();
    const value = (series: string): number =>
      Number(
        text
          .split('\n')
          .find((l) => l.startsWith(`${series} `))
          ?.split(' ')[1],
      );
    expect(value('media_job_attempts_total{kind="transcode"}')).to.equal(3);
    const duration = 'media_job_attempt_duration_seconds_count{kind="transcode",format="mp4"';
    expect(value(`${duration},outcome="retried"}`)).to.equal(2);
    expect(value(`${duration},outcome="succeeded"}`)).to.equal(1);
    expect(value(`${duration},outcome="failed"}`)).to.equal(0);
    expect(
      value('media_jobs_finished_total{kind="transcode",outcome="succeeded",code=""}'),
    ).to.equal(1);
    expect(
      value(
        'media_jobs_finished_total{kind="transcode",outcome="failed",code="input_unreachable"}',
      ),
    ).to.equal(0);
    await h.bus.close();
  });
}

function describesJobWaitingRetryShows(): void {
  it('a job waiting for its retry shows queued, since the due time, with its next attempt and the last error', async () => {
    const h = await harness(
      async () => {
        throw new MediaError('input_unreachable', 'the file server is unavailable (503)');
      },
      3,
      { retryBackoffMs: 20_000, random: () => 0.5 },
    );
    const view = createJobStatusView(
      { bus: h.bus, codec: h.codec, log: silentLogger },
      {
        maxJobs: 100,
      },
    );
    await view.start();
    const waiting = job(11);
    await h.submit(waiting);
    await h.until(() => view.get(waiting.jobId, 'o')?.attempt === 2);
    const status = view.get(waiting.jobId, 'o');
    expect(status).to.include({ status: 'queued', attempt: 2 });
    expect(status?.error).to.deep.equal({
      code: 'input_unreachable',
      message: 'the file server is unavailable (503)',
    });
    // The retry falls due about 10 s out (half of the 20 s ceiling); the job waits from then.
    const due = Date.parse(status?.queuedSince ?? '') - Date.now();
    expect(due).to.be.within(5_000, 11_000);
    expect(status).not.to.have.property('progressPercent');
    expect(view.waiting().get('o\u0000transcode')?.count).to.equal(1);
    await view.close();
    await h.bus.close();
  });
}

function describesRetryScheduled20S(): void {
  it('a retry scheduled 20 s out holds no worker slot: a job published after it runs at once', async () => {
    const attempts: string[] = [];
    const scheduled: number[] = [];
    const testCodec = createEventCodec(loadContracts(), 'test');
    const h = await harness(
      async (j, ctx) => {
        attempts.push(`${j.jobId.slice(-1)}#${ctx.attempt}`);
        if (j.jobId.endsWith('8')) throw new MediaError('input_unreachable', 'flaky');
        return result;
      },
      3,
      {
        retryBackoffMs: 20_000,
        random: () => 0.999,
        wrapBus: (bus) => ({
          ...bus,
          publish: async (records) => {
            await bus.publish(records);
            for (const r of records) {
              const d = testCodec.decode(r);
              if (d.ok && d.event.type === 'media.job.requested')
                scheduled.push(new Date(d.event.data.notBefore ?? 0).getTime());
            }
          },
        }),
      },
    );
    await h.submit(job(8));
    await h.until(() => scheduled.length === 1);
    expect((scheduled[0] ?? 0) - Date.now()).to.be.greaterThan(19_000);
    const started = Date.now();
    await h.submit(job(9));
    await h.until(() => h.events.some((e) => e.type === 'media.job.succeeded'));
    expect(Date.now() - started).to.be.lessThan(3000);
    expect(attempts).to.deep.equal(['8#1', '9#1']);
    await h.bus.close();
  });

  it('draws the retry wait below a doubling ceiling, capped (full jitter)', () => {
    const opts = { retryBackoffMs: 1000, retryBackoffMaxMs: 5000 };
    expect(retryDelayMs(opts, 1, () => 0.5)).to.equal(500);
    expect(retryDelayMs(opts, 3, () => 0.5)).to.equal(2000);
    expect(retryDelayMs(opts, 10, () => 0.999)).to.equal(4995);
    expect(retryDelayMs(opts, 2, () => 0)).to.equal(0);
  });
}

function describesPublishesOutcomePromptlyHowever(): void {
  it('publishes the outcome promptly however slow progress publishes are, and drops stale progress', async () => {
    let progressPublishes = 0;
    const slowProgress = (bus: EventBus): EventBus => ({
      ...bus,
      publish: async (records) => {
        if (records.some((r) => r.headers?.['ce-type'] === 'media.job.progress')) {
          progressPublishes += 1;
          await new Promise((r) => setTimeout(r, 1500));
        }
        await bus.publish(records);
      },
    });
    let returned = 0;
    const h = await harness(
      async (_j, ctx) => {
        for (let i = 1; i <= 50; i++) {
          ctx.progress(i * 2, 'encode');
          await new Promise((r) => setTimeout(r, 4));
        }
        returned = Date.now();
        return result;
      },
      3,
      { wrapBus: slowProgress },
    );
    await h.submit(job(10));
    await h.until(() => h.events.some((e) => e.type === 'media.job.succeeded'));
    expect(Date.now() - returned).to.be.lessThan(500);
    expect(progressPublishes).to.be.at.most(2);
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
    const failed = h.events
      .filter((e) => e.type === 'media.job.failed')
      .map((e) => e.data as { jobId: string; attempt: number; error: { code: string } });
    expect(failed.find((f) => f.jobId.endsWith('3'))).to.deep.include({ attempt: 1 });
    expect(failed.find((f) => f.jobId.endsWith('4'))).to.deep.include({ attempt: 2 });
    expect(failed.find((f) => f.jobId.endsWith('4'))?.error.code).to.equal('input_unreachable');
    await h.bus.close();
  });
}

function describesReportsUnexpectedExceptionInternal(): void {
  it('reports an unexpected exception as internal without its message', async () => {
    const h = await harness(async () => {
      throw new Error('/tmp/secret/path exploded');
    });
    await h.submit(job(5));
    await h.until(() => h.events.some((e) => e.type === 'media.job.failed'));
    const failed = h.events.find((e) => e.type === 'media.job.failed');
    expect(failed?.data).to.deep.include({
      error: { code: 'internal', message: 'internal error', retryable: false },
    });
  });

  it('dead-letters a poison record and still runs the next good job', async () => {
    const h = await harness(async () => result);
    await h.bus.publish([
      { topic: topics.transcodeRequests, key: 'x', value: Buffer.from('{not json') },
    ]);
    const bad = h.codec.encode(topics.transcodeRequests, 'media.job.requested', job(6));
    const tampered = JSON.parse(bad.value.toString()) as {
      data: { transcode: { encoder: string } };
    };
    tampered.data.transcode.encoder = 'av1';
    await h.bus.publish([{ ...bad, value: Buffer.from(JSON.stringify(tampered)) }]);
    await h.submit(job(7));
    await h.until(() => h.events.some((e) => e.type === 'media.job.succeeded'));
    await h.until(() => h.dead.length === 2);
    expect(JSON.parse(h.dead[0] ?? '{}')).to.include({
      reason: 'invalid_event',
      detail: 'value is not JSON',
      sourceTopic: topics.transcodeRequests,
    });
    expect(JSON.parse(h.dead[1] ?? '{}').detail).to.match(/transcode\.encoder/);
    await h.bus.close();
  });
}

function describesJobRequestsProducedStraight(): void {
  describe('job requests produced straight to the bus pass the ingress rules', () => {
    describesRefusedURLFailedInvalid();

    describesDataBreaksSchemaStill();
  });
}

function describesRefusedURLFailedInvalid(): void {
  it('a refused URL: failed as invalid_event naming the field, dead-lettered as url_forbidden, failure callback kept', async () => {
    const { failed, dead } = await refusedWith(
      job(20, { output: { url: 'http://169.254.169.254/x' }, callbacks: { failureUrl } }),
    );
    expect(failed.error).to.deep.include({ code: 'invalid_event', retryable: false });
    expect(failed.error.message).to.contain('data.output.url');
    expect(failed.callbacks).to.deep.equal({ failureUrl });
    expect(dead.reason).to.equal('url_forbidden');
  });

  it('a refused failureUrl is not called back', async () => {
    const { failed } = await refusedWith(
      job(21, { callbacks: { failureUrl: 'http://127.0.0.1:9/fail' } }),
    );
    expect(failed.error.message).to.contain('data.callbacks.failureUrl');
    expect(failed.callbacks).to.equal(undefined);
  });

  it('an organisation the service does not know', async () => {
    const { failed, dead } = await refusedWith(job(22), { knownOrgs: new Set(['acme']) });
    expect(failed.error.message).to.contain('data.orgId');
    expect(dead.reason).to.equal('unknown_org');
  });

  it('credentials that do not open with the configured keys', async () => {
    const j = job(23);
    const { failed, dead } = await refusedWith({
      ...j,
      input: {
        url: j.input.url,
        creds: seal(awsCreds, { id: 'k', key: Buffer.alloc(32, 9) }, j.jobId),
      },
    });
    expect(failed.error.message).to.contain('data.input.creds');
    expect(dead.reason).to.equal('secret_unreadable');
  });

  it('a rule of the HTTP API the event schema does not hold: the credentials must fit the bucket', async () => {
    const j = job(24);
    const { failed, dead } = await refusedWith({
      ...j,
      input: {
        url: j.input.url,
        creds: seal({ accountName: 'acct', accountKey: 'k' }, key, j.jobId),
      },
    });
    expect(failed.error.message).to.match(/^data\.input\.creds/);
    expect(dead.reason).to.equal('invalid_event');
  });
}

function describesDataBreaksSchemaStill(): void {
  it('data that breaks its schema still fails the job it names', async () => {
    const h = await harness(async () => result);
    const bad = JSON.parse(
      h.codec.encode(topics.transcodeRequests, 'media.job.requested', job(25)).value.toString(),
    ) as { data: { transcode: { bitrateKbps: string } } };
    bad.data.transcode.bitrateKbps = '3000';
    await h.bus.publish([
      { topic: topics.transcodeRequests, key: 'k', value: Buffer.from(JSON.stringify(bad)) },
    ]);
    await h.until(() => h.events.some((e) => e.type === 'media.job.failed'));
    const failed = h.events.find((e) => e.type === 'media.job.failed');
    expect(failed?.data).to.deep.include({ jobId: job(25).jobId });
    expect(JSON.stringify(failed?.data)).to.contain('data.transcode.bitrateKbps');
    expect(await h.metrics.registry.metrics()).to.match(
      /^media_jobs_finished_total\{kind="transcode",outcome="failed",code="invalid_event"\} 1$/m,
    );
    await h.bus.close();
  });
}
