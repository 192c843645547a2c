import {
  requestTopicOf,
  topics,
  type BusRecord,
  type DeliveryContext,
  type EventBus,
  type Subscription,
} from '../bus/event-bus.ts';
import type { EventCodec, EventDataOf } from '../events/event-codec.ts';
import type { JobRequested, JobResult, SealedSecret } from '../contracts/types.generated.ts';
import { MediaError, toErrorData, type ErrorData } from '../errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import {
  extractTraceContext,
  inSpan,
  markFailed,
  SpanKind,
  withTraceHeaders,
  type TraceContext,
  traceLogFields,
  tracingOff,
  type Tracing,
} from '../observability/tracing.ts';
import { open, type SealingKey } from '../crypto/secret-box.ts';
import { fullJitterBackoffMs, type Clock } from '../time.ts';
import { deadLetter } from './dead-letter.ts';
import { progressReporter, type ProgressStage } from './progress-reporter.ts';
import { admissionRefusal, readJobOwner, type AdmissionRules, type Refusal } from './admit-job.ts';
import { startJobCancels, type JobCancels } from '../status/job-cancels.ts';
import { createRunLedger, type RunLedger } from './run-ledger.ts';
import { createRunningJobs, type RunningJob, type RunningJobs } from './running-jobs.ts';
import { readCloudEvent } from '../events/read-cloudevent.ts';

export type JobKind = JobRequested['kind'];
export type { ProgressStage } from './progress-reporter.ts';

/** What a job handler is given besides the job. Handlers know nothing of the transport. */
export interface JobContext {
  /** Aborted on time-out, shutdown or loss of the record; the handler must stop promptly. */
  signal: AbortSignal;
  attempt: number;
  kind: JobKind;
  /** The job's organisation: inner slots (CPU) are shared fairly between organisations too. */
  orgId?: string;
  log: Logger;
  /** Runs `work` in a span of its own below the job's span (download, ffmpeg, upload). */
  span<T>(name: string, work: () => Promise<T>): Promise<T>;
  /** Reports progress (0–100) of the whole job; throttled, and keeps the bus lease alive. */
  progress(percent: number, stage: ProgressStage): void;
  /** Opens a sealed credentials object from the job. */
  openSecret(sealed: SealedSecret | undefined): unknown;
}

export type JobHandler = (job: JobRequested, context: JobContext) => Promise<JobResult>;

export interface JobWorkerDeps {
  bus: EventBus;
  codec: EventCodec;
  log: Logger;
  metrics: Metrics;
  /** Default: off (trace context still passed along). */
  tracing?: Tracing;
  clock: Clock;
  sealingKeys: readonly SealingKey[];
  /** Source of the retry jitter, uniform in [0, 1) (default Math.random); tests pass a fixed one. */
  random?: () => number;
}

export interface JobWorkerOptions {
  kind: JobKind;
  /** Consumer group; every copy of one worker service uses the same. */
  group: string;
  concurrency: number;
  maxAttempts: number;
  /**
   * Backoff ceiling before attempt 2, ms; doubled for each later attempt. The actual wait is
   * drawn uniformly below the ceiling (full jitter), so retries of many jobs failing together
   * spread out instead of returning in a wave.
   */
  retryBackoffMs: number;
  /** Cap of the doubled backoff ceiling, ms (default 300000: 5 min). */
  retryBackoffMaxMs?: number;
  jobTimeoutMs: number;
  /** Least time between two progress events of one job (default 1 s). */
  progressIntervalMs?: number;
  /** The ingress's rules, applied again on consume: jobs may be produced straight to the bus. */
  admission: AdmissionRules;
  /** Slot weight per organisation (default 1 each); see fair-share.ts. */
  orgWeights?: ReadonlyMap<string, number>;
  /** Jobs one organisation runs at once on this worker (0 or unset: no cap). */
  orgMaxRunning?: number;
  handler: JobHandler;
}

/**
 * The one consumer loop of the workers: decode and validate, run the handler, publish exactly
 * one outcome (succeeded, failed, or the next attempt), and only then let the bus commit.
 */
export async function startJobWorker(
  deps: JobWorkerDeps,
  options: JobWorkerOptions,
): Promise<Subscription> {
  const topic = requestTopicOf[options.kind];
  // Cancels are read first, so that a restarted worker knows the old ones before its first job.
  const cancels = await startJobCancels(deps);
  const state: WorkerState = { cancels, ledger: createRunLedger(), running: createRunningJobs() };
  const jobs = await deps.bus.subscribe({
    group: options.group,
    topics: [topic],
    concurrency: options.concurrency,
    fromBeginning: true,
    handler: (record, delivery) => handleRecord(deps, options, state, record, delivery),
    fairness: {
      tenantOf: orgOfRecord,
      ...(options.orgWeights ? { weights: options.orgWeights } : {}),
      ...(options.orgMaxRunning ? { maxRunningPerTenant: options.orgMaxRunning } : {}),
    },
    onLag: (topic, partition, records) =>
      deps.metrics.consumerLag.set({ group: options.group, topic, partition }, records),
  });
  return {
    async close(graceMs = 0) {
      const drained = state.running.drain(deps.log, deps.metrics, options, graceMs);
      await jobs.close(graceMs);
      drained();
      await cancels.close();
    },
  };
}

/** What the records of one worker share: the cancels read so far, the runs it made and makes. */
interface WorkerState {
  cancels: JobCancels;
  ledger: RunLedger;
  running: RunningJobs;
}

/**
 * The organisation a job record is fair-shared under, read without validating (validation comes
 * when it runs). A record that names none shares one tenant with the other unreadable ones.
 */
export function orgOfRecord(record: BusRecord): string {
  const read = readCloudEvent(record);
  const data = read.ok ? read.event['data'] : undefined;
  const org = data && typeof data === 'object' ? (data as { orgId?: unknown }).orgId : undefined;
  return typeof org === 'string' ? org : '';
}

async function handleRecord(
  deps: JobWorkerDeps,
  options: JobWorkerOptions,
  state: WorkerState,
  record: BusRecord,
  delivery: DeliveryContext,
): Promise<void> {
  // The producer's trace context (the ingress's publish span, or whoever produced the record).
  const parent = extractTraceContext(record.headers);
  const decoded = deps.codec.decode(record);
  if (!decoded.ok)
    return refuse(
      deps,
      options,
      record,
      { reason: 'invalid_event', message: decoded.reason },
      decoded.data,
      parent,
    );
  if (decoded.event.type !== 'media.job.requested' || decoded.event.data.kind !== options.kind)
    return refuse(
      deps,
      options,
      record,
      {
        reason: 'unexpected_event',
        message: `${decoded.event.type} is not a ${options.kind} request`,
      },
      decoded.event.data,
      parent,
    );
  // job.notBefore is information only: the bus did not deliver the record before it.
  const job = decoded.event.data;
  const refusal = admissionRefusal(job, options.admission, deps.sealingKeys);
  if (refusal) return refuse(deps, options, record, refusal, job, parent);
  if (delivery.signal.aborted) throw new Error('handed back before start');
  await inSpan(
    (deps.tracing ?? tracingOff).tracer,
    `${job.kind} job`,
    parent,
    (trace, span) =>
      runJob(
        deps,
        options,
        state,
        { topic: record.topic, eventId: decoded.event.id },
        job,
        delivery,
        trace,
      ).then((error) => {
        if (error) markFailed(span, error);
      }),
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.destination.name': record.topic,
        'media.job.id': job.jobId,
        'media.job.kind': job.kind,
        'media.job.attempt': job.attempt,
      },
    },
  );
}

async function runJob(
  deps: JobWorkerDeps,
  options: JobWorkerOptions,
  state: WorkerState,
  record: { topic: string; eventId: string },
  job: JobRequested,
  delivery: DeliveryContext,
  trace: TraceContext,
): Promise<ErrorData | undefined> {
  const log = deps.log.child({
    jobId: job.jobId,
    kind: job.kind,
    attempt: job.attempt,
    ...traceLogFields(trace),
  });
  if (!state.ledger.claim(job.jobId, job.attempt, record.eventId)) {
    log.info('job.duplicate_request', { eventId: record.eventId });
    return undefined;
  }
  if (state.cancels.isCanceled(job.jobId, job.orgId)) {
    const canceled = { handedBack: false as const, error: CANCELED_BEFORE_START };
    await publishOutcome(deps, options, record.topic, job, canceled, log, trace);
    return CANCELED_BEFORE_START;
  }
  await publish(
    deps,
    'media.job.processing',
    { ...identity(job), startedAt: deps.clock.now().toISOString() },
    trace,
  );
  deps.metrics.jobsStarted.inc({ kind: job.kind });
  deps.metrics.queueWait.observe({ kind: job.kind }, queueWaitSeconds(job, deps.clock.now()));
  log.info('job.started', {});
  deps.metrics.jobsInProgress.inc({ kind: job.kind });
  const started = performance.now();
  const running = state.running.start(job);
  let outcome: RunOutcome | undefined;
  const run = await runHandler(deps, options, state, job, delivery, log, trace, running)
    .then((o) => (outcome = o))
    .finally(() => {
      deps.metrics.jobsInProgress.dec({ kind: job.kind });
      state.running.end(job.jobId, running, outcome?.handedBack === true);
    });
  const seconds = (performance.now() - started) / 1000;

  if (run.handedBack) {
    log.warn('job.handed_back', { reason: 'worker stopping or record lost' });
    throw new Error('handed back');
  }
  await publishOutcome(deps, options, record.topic, job, run, log, trace);
  deps.metrics.jobDuration.observe(
    { kind: job.kind, format: jobFormat(job), outcome: attemptOutcome(run, job, options) },
    seconds,
  );
  return run.error;
}

/** How an attempt ended, for its duration: a retried attempt is not the job's failure. */
function attemptOutcome(run: RunOutcome, job: JobRequested, options: JobWorkerOptions): string {
  if (run.handedBack || !run.error) return 'succeeded';
  if (run.error.code === 'canceled') return 'canceled';
  return run.error.retryable && job.attempt < options.maxAttempts ? 'retried' : 'failed';
}

type RunOutcome =
  { handedBack: true } | { handedBack: false; result?: JobResult; error?: ErrorData };

const CANCELED_BEFORE_START: ErrorData = {
  code: 'canceled',
  message: 'the job was canceled before it started',
  retryable: false,
};

async function runHandler(
  deps: JobWorkerDeps,
  options: JobWorkerOptions,
  state: WorkerState,
  job: JobRequested,
  delivery: DeliveryContext,
  log: Logger,
  trace: TraceContext,
  running: RunningJob,
): Promise<RunOutcome> {
  const controller = new AbortController();
  const timeout = setTimeout(
    () =>
      controller.abort(
        new MediaError('job_timeout', `the job ran longer than ${options.jobTimeoutMs} ms`),
      ),
    options.jobTimeoutMs,
  );
  const onLost = (): void =>
    controller.abort(new MediaError('interrupted', 'the worker was stopped'));
  delivery.signal.addEventListener('abort', onLost, { once: true });
  const unwatch = state.cancels.watch(job.jobId, job.orgId, () => {
    log.info('job.cancel_received', {});
    controller.abort(new MediaError('canceled', 'the job was canceled'));
  });
  const progress = progressReporter({
    intervalMs: options.progressIntervalMs ?? 1000,
    job: identity(job),
    heartbeat: () => delivery.heartbeat(),
    publish: (data) => publish(deps, 'media.job.progress', data, trace),
    log,
  });
  try {
    const result = await options.handler(job, {
      signal: controller.signal,
      attempt: job.attempt,
      kind: job.kind,
      orgId: job.orgId,
      log,
      span: (name, work) => inSpan((deps.tracing ?? tracingOff).tracer, name, trace, work),
      progress: (percent, stage) => {
        running.percent = percent;
        progress.report(percent, stage);
      },
      openSecret: (sealed) => (sealed ? open(sealed, deps.sealingKeys, job.jobId) : undefined),
    });
    return { handedBack: false, result };
  } catch (error) {
    if (delivery.signal.aborted) return { handedBack: true };
    const reason: unknown = controller.signal.aborted ? controller.signal.reason : error;
    if (!(reason instanceof MediaError)) log.error('job.internal_error', { error });
    return { handedBack: false, error: toErrorData(reason) };
  } finally {
    clearTimeout(timeout);
    delivery.signal.removeEventListener('abort', onLost);
    unwatch();
    progress.stop();
  }
}

async function publishOutcome(
  deps: JobWorkerDeps,
  options: JobWorkerOptions,
  topic: string,
  job: JobRequested,
  run: Exclude<RunOutcome, { handedBack: true }>,
  log: Logger,
  trace: TraceContext,
): Promise<void> {
  const finishedAt = deps.clock.now().toISOString();
  const callbacks = job.callbacks ? { callbacks: job.callbacks } : {};
  if (run.result) {
    await publish(
      deps,
      'media.job.succeeded',
      { ...identity(job), finishedAt, ...callbacks, result: run.result },
      trace,
    );
    deps.metrics.jobsFinished.inc({ kind: job.kind, outcome: 'succeeded', code: '' });
    deps.metrics.mediaSeconds.inc({ kind: job.kind }, run.result.durationSeconds);
    log.info('job.succeeded', { outputUrl: run.result.outputUrl, sizeBytes: run.result.sizeBytes });
    return;
  }
  const error = run.error ?? { code: 'internal', message: 'internal error', retryable: false };
  if (error.retryable && job.attempt < options.maxAttempts) {
    const delay = retryDelayMs(options, job.attempt, deps.random ?? Math.random);
    const notBefore = deps.clock.now().getTime() + delay;
    // The bus holds the retry until it is due; no worker slot or partition waits for it.
    const next: JobRequested = {
      ...job,
      attempt: job.attempt + 1,
      notBefore: new Date(notBefore).toISOString(),
    };
    await deps.bus.publish([
      withTraceHeaders(
        { ...deps.codec.encode(topic, 'media.job.requested', next), notBefore },
        trace,
      ),
    ]);
    // After the retry is on the bus, so a status that says "waiting for a retry" has one.
    await publish(
      deps,
      'media.job.retry-scheduled',
      {
        ...identity(next),
        notBefore: next.notBefore ?? '',
        error: { code: error.code, message: error.message, retryable: true },
      },
      trace,
    );
    deps.metrics.jobsRetried.inc({ kind: job.kind, code: error.code });
    log.warn('job.retry_scheduled', { code: error.code, delayMs: delay });
    return;
  }
  await publish(
    deps,
    'media.job.failed',
    { ...identity(job), finishedAt, ...callbacks, error },
    trace,
  );
  const outcome = error.code === 'canceled' ? 'canceled' : 'failed';
  deps.metrics.jobsFinished.inc({ kind: job.kind, outcome, code: error.code });
  log.warn('job.failed', { code: error.code, message: error.message });
}

/**
 * A request that will never run: dead-lettered with the reason and, when its data still names a
 * job and an organisation, failed as that job, so its producer sees why in the job's status and
 * in the failure callback. The failed event is published first: if the dead letter cannot be,
 * the record comes again and yields the same event id.
 */
async function refuse(
  deps: JobWorkerDeps,
  options: JobWorkerOptions,
  record: BusRecord,
  refusal: Refusal,
  data: unknown,
  trace: TraceContext,
): Promise<void> {
  const owner = readJobOwner(data, options.kind, options.admission.addressPolicy);
  if (owner) {
    const { failureUrl, ...who } = owner;
    const message =
      refusal.message.length > 2000 ? `${refusal.message.slice(0, 1999)}…` : refusal.message;
    await publish(
      deps,
      'media.job.failed',
      {
        ...who,
        finishedAt: deps.clock.now().toISOString(),
        ...(failureUrl ? { callbacks: { failureUrl } } : {}),
        error: { code: 'invalid_event', message, retryable: false },
      },
      trace,
    );
    deps.metrics.jobsFinished.inc({ kind: owner.kind, outcome: 'failed', code: 'invalid_event' });
  }
  await deadLetter(deps, record, refusal.reason, refusal.message);
  deps.log.warn('job.refused', {
    reason: refusal.reason,
    detail: refusal.message,
    jobId: owner?.jobId,
    orgId: owner?.orgId,
    topic: record.topic,
  });
}

/** The output format of a job (a label of job_attempt_duration_seconds: a GIF and an MP4 summary cost differently). */
export function jobFormat(job: JobRequested): string {
  return job.transcode?.container ?? job.summary?.format ?? (job.stream ? 'cmaf' : 'unknown');
}

function identity(job: JobRequested): Pick<JobRequested, 'jobId' | 'kind' | 'orgId' | 'attempt'> {
  return { jobId: job.jobId, kind: job.kind, orgId: job.orgId, attempt: job.attempt };
}

async function publish<T extends keyof EventDataOf>(
  deps: JobWorkerDeps,
  type: T,
  data: EventDataOf[T],
  trace: TraceContext,
): Promise<void> {
  await deps.bus.publish([
    withTraceHeaders(deps.codec.encode(topics.jobEvents, type, data), trace),
  ]);
  deps.metrics.eventsPublished.inc({ type });
}

/** The wait before the next attempt of a job (see fullJitterBackoffMs). */
export function retryDelayMs(
  options: Pick<JobWorkerOptions, 'retryBackoffMs' | 'retryBackoffMaxMs'>,
  attempt: number,
  random: () => number,
): number {
  return fullJitterBackoffMs(
    { baseMs: options.retryBackoffMs, capMs: options.retryBackoffMaxMs ?? 300_000 },
    attempt,
    random,
  );
}

/**
 * Time from acknowledgement to start of this attempt, s: from the submission for the first
 * attempt, from the due time of a scheduled retry for the others (its wait before is backoff).
 */
export function queueWaitSeconds(job: JobRequested, now: Date): number {
  const since = Date.parse(job.attempt > 1 && job.notBefore ? job.notBefore : job.submittedAt);
  return Number.isFinite(since) ? Math.max(0, (now.getTime() - since) / 1000) : 0;
}
