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
import { open, type SealingKey } from '../crypto/secret-box.ts';
import { fullJitterBackoffMs, type Clock } from '../time.ts';
import { deadLetter } from './dead-letter.ts';
import { progressReporter, type ProgressStage } from './progress-reporter.ts';
import { admissionRefusal, readJobOwner, type AdmissionRules, type Refusal } from './admit-job.ts';
import { readCloudEvent } from '../events/read-cloudevent.ts';

export type JobKind = JobRequested['kind'];
export type { ProgressStage } from './progress-reporter.ts';

/** What a job handler is given besides the job. Handlers know nothing of the transport. */
export interface JobContext {
  /** Aborted on time-out, shutdown or loss of the record; the handler must stop promptly. */
  signal: AbortSignal;
  attempt: number;
  /** The job's organisation: inner slots (CPU) are shared fairly between organisations too. */
  orgId?: string;
  log: Logger;
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
export function startJobWorker(
  deps: JobWorkerDeps,
  options: JobWorkerOptions,
): Promise<Subscription> {
  const topic = requestTopicOf[options.kind];
  return deps.bus.subscribe({
    group: options.group,
    topics: [topic],
    concurrency: options.concurrency,
    fromBeginning: true,
    handler: (record, delivery) => handleRecord(deps, options, record, delivery),
    fairness: {
      tenantOf: orgOfRecord,
      ...(options.orgWeights ? { weights: options.orgWeights } : {}),
      ...(options.orgMaxRunning ? { maxRunningPerTenant: options.orgMaxRunning } : {}),
    },
    onLag: (topic, partition, records) =>
      deps.metrics.consumerLag.set({ group: options.group, topic, partition }, records),
  });
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
  record: BusRecord,
  delivery: DeliveryContext,
): Promise<void> {
  const decoded = deps.codec.decode(record);
  if (!decoded.ok)
    return refuse(
      deps,
      options,
      record,
      { reason: 'invalid_event', message: decoded.reason },
      decoded.data,
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
    );
  // job.notBefore is information only: the bus did not deliver the record before it.
  const job = decoded.event.data;
  const refusal = admissionRefusal(job, options.admission, deps.sealingKeys);
  if (refusal) return refuse(deps, options, record, refusal, job);
  if (delivery.signal.aborted) throw new Error('handed back before start');

  const log = deps.log.child({ jobId: job.jobId, kind: job.kind, attempt: job.attempt });
  await publish(deps, 'media.job.processing', {
    ...identity(job),
    startedAt: deps.clock.now().toISOString(),
  });
  deps.metrics.jobsStarted.inc({ kind: job.kind });
  deps.metrics.queueWait.observe({ kind: job.kind }, queueWaitSeconds(job, deps.clock.now()));
  log.info('job.started', {});
  deps.metrics.jobsInProgress.inc({ kind: job.kind });
  const started = performance.now();
  const run = await runHandler(deps, options, job, delivery, log).finally(() =>
    deps.metrics.jobsInProgress.dec({ kind: job.kind }),
  );
  const seconds = (performance.now() - started) / 1000;

  if (run.handedBack) {
    log.warn('job.handed_back', { reason: 'worker stopping or record lost' });
    throw new Error('handed back');
  }
  await publishOutcome(deps, options, record.topic, job, run, log);
  deps.metrics.jobDuration.observe(
    { kind: job.kind, outcome: run.error ? 'failed' : 'succeeded' },
    seconds,
  );
}

type RunOutcome =
  { handedBack: true } | { handedBack: false; result?: JobResult; error?: ErrorData };

async function runHandler(
  deps: JobWorkerDeps,
  options: JobWorkerOptions,
  job: JobRequested,
  delivery: DeliveryContext,
  log: Logger,
): Promise<RunOutcome> {
  const controller = new AbortController();
  const timeout = setTimeout(
    () =>
      controller.abort(
        new MediaError('job_timeout', `the job ran longer than ${options.jobTimeoutMs} ms`),
      ),
    options.jobTimeoutMs,
  );
  const onLost = (): void => controller.abort(new MediaError('canceled', 'the worker was stopped'));
  delivery.signal.addEventListener('abort', onLost, { once: true });
  const progress = progressReporter({
    intervalMs: options.progressIntervalMs ?? 1000,
    job: identity(job),
    heartbeat: () => delivery.heartbeat(),
    publish: (data) => publish(deps, 'media.job.progress', data),
    log,
  });
  try {
    const result = await options.handler(job, {
      signal: controller.signal,
      attempt: job.attempt,
      orgId: job.orgId,
      log,
      progress: progress.report,
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
): Promise<void> {
  const finishedAt = deps.clock.now().toISOString();
  const callbacks = job.callbacks ? { callbacks: job.callbacks } : {};
  if (run.result) {
    await publish(deps, 'media.job.succeeded', {
      ...identity(job),
      finishedAt,
      ...callbacks,
      result: run.result,
    });
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
      { ...deps.codec.encode(topic, 'media.job.requested', next), notBefore },
    ]);
    deps.metrics.jobsRetried.inc({ kind: job.kind, code: error.code });
    log.warn('job.retry_scheduled', { code: error.code, delayMs: delay });
    return;
  }
  await publish(deps, 'media.job.failed', { ...identity(job), finishedAt, ...callbacks, error });
  deps.metrics.jobsFinished.inc({ kind: job.kind, outcome: 'failed', code: error.code });
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
): Promise<void> {
  const owner = readJobOwner(data, options.kind, options.admission.addressPolicy);
  if (owner) {
    const { failureUrl, ...who } = owner;
    const message =
      refusal.message.length > 2000 ? `${refusal.message.slice(0, 1999)}…` : refusal.message;
    await publish(deps, 'media.job.failed', {
      ...who,
      finishedAt: deps.clock.now().toISOString(),
      ...(failureUrl ? { callbacks: { failureUrl } } : {}),
      error: { code: 'invalid_event', message, retryable: false },
    });
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

function identity(job: JobRequested): Pick<JobRequested, 'jobId' | 'kind' | 'orgId' | 'attempt'> {
  return { jobId: job.jobId, kind: job.kind, orgId: job.orgId, attempt: job.attempt };
}

async function publish<T extends keyof EventDataOf>(
  deps: JobWorkerDeps,
  type: T,
  data: EventDataOf[T],
): Promise<void> {
  await deps.bus.publish([deps.codec.encode(topics.jobEvents, type, data)]);
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
