import { createRequire } from 'node:module';
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';

import { errorCatalog } from '../errors.ts';

const PREFIX = 'media_';

/** Label values known before anything happens: their series exist, at 0, from the start. */
export const JOB_KINDS = ['transcode', 'summary', 'stream'] as const;
/** Output formats by job kind (the `format` label of job durations). */
export const JOB_FORMATS = {
  transcode: ['mp4', 'webm'],
  summary: ['gif', 'mp4'],
  stream: ['cmaf'],
} as const;
/** Where bytes are moved from and to (the URL scheme's store). */
export const STORE_KINDS = ['http', 's3', 'azure', 'gcs'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];
/**
 * The ffmpeg passes of a job: `analyse` (summary content analysis), `encode` (the output) and
 * `quality` (the output's quality report).
 */
export const FFMPEG_PASSES = ['analyse', 'encode', 'quality'] as const;
/** How a job ended (`media_jobs_finished_total`): a cancel is the caller's choice, not a failure. */
export const JOB_OUTCOMES = ['succeeded', 'failed', 'canceled'] as const;
/** How one attempt ended (`media_job_attempt_duration_seconds`): `retried` failed and runs again. */
export const ATTEMPT_OUTCOMES = ['succeeded', 'failed', 'retried', 'canceled'] as const;
export const DEAD_LETTER_REASONS = [
  'invalid_event',
  'unexpected_event',
  'unknown_org',
  'url_forbidden',
  'secret_unreadable',
  'callback_exhausted',
  'callback_rejected',
] as const;
export const CALLBACK_OUTCOMES = [
  'delivered',
  'retried',
  'given_up',
  'deferred',
  'stopped',
] as const;
export const CALLBACK_ATTEMPT_OUTCOMES = ['ok', 'error'] as const;
/** What one callback attempt met: the receiver's status class, or why there was no answer. */
export const CALLBACK_ATTEMPT_RESULTS = [
  '2xx',
  '4xx',
  '5xx',
  'timeout',
  'network_error',
  'refused_address',
] as const;

/** Every metric of the service, registered on a registry passed in (never prom-client's global). */
export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'route' | 'method' | 'status'>;
  httpDuration: Histogram<'route' | 'method'>;
  jobsSubmitted: Counter<'kind'>;
  /** Attempts started: a job retried twice counts three (jobs are counted by jobsFinished). */
  jobsStarted: Counter<'kind'>;
  jobsFinished: Counter<'kind' | 'outcome' | 'code'>;
  jobsRetried: Counter<'kind' | 'code'>;
  /** Attempts that moved to another worker before their work began (started again there). */
  jobsMoved: Counter<'kind'>;
  /** Wall time of one attempt, by how it ended (ATTEMPT_OUTCOMES). */
  jobDuration: Histogram<'kind' | 'format' | 'outcome'>;
  jobsInProgress: Gauge<'kind'>;
  /** 1 while a worker of this kind in this process is stopping (draining its running jobs). */
  workerDraining: Gauge<'kind'>;
  queueWait: Histogram<'kind'>;
  jobsWaiting: Gauge<'org' | 'kind'>;
  /** Where `jobsWaiting` is read from at each scrape (the ingress's status view). */
  waitingSources: Set<() => Iterable<{ orgId: string; kind: string; count: number }>>;
  consumerLag: Gauge<'group' | 'topic' | 'partition'>;
  mediaSeconds: Counter<'kind'>;
  bytesTransferred: Counter<'direction' | 'store'>;
  ffmpegSpeed: Histogram<'kind' | 'pass'>;
  ffmpegMediaSeconds: Counter<'kind' | 'pass'>;
  ffmpegSeconds: Counter<'kind' | 'pass'>;
  eventsPublished: Counter<'type'>;
  eventsDeadLettered: Counter<'reason'>;
  callbacks: Counter<'outcome'>;
  callbackDuration: Histogram<'outcome'>;
  callbackAttempts: Counter<'result'>;
  /** 1, labelled with the service's version and Node's. */
  buildInfo: Gauge<'version' | 'node_version'>;
}

export function createMetrics(
  registry: Registry,
  options: { defaultMetrics?: boolean } = {},
): Metrics {
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: PREFIX });
  const metrics = registerMetrics(registry);
  startKnownSeriesAtZero(metrics);
  metrics.buildInfo.set({ version: serviceVersion(), node_version: process.version }, 1);
  return metrics;
}

/** The version in package.json (the image ships it beside services/). */
function serviceVersion(): string {
  const { version } = createRequire(import.meta.url)('../../../package.json') as {
    version?: unknown;
  };
  return typeof version === 'string' ? version : 'unknown';
}

/**
 * A labelled series is born at its first increment, which rate() and increase() cannot see as
 * a rise: the first failure after a start would never show on a dashboard. So every series
 * whose labels are known in advance is created at 0 when the process starts.
 */
function startKnownSeriesAtZero(m: Metrics): void {
  const codes = Object.keys(errorCatalog);
  const retryable = codes.filter((c) => errorCatalog[c as keyof typeof errorCatalog].retryable);
  for (const kind of JOB_KINDS) {
    m.jobsSubmitted.inc({ kind }, 0);
    m.jobsStarted.inc({ kind }, 0);
    m.jobsMoved.inc({ kind }, 0);
    m.mediaSeconds.inc({ kind }, 0);
    m.jobsInProgress.set({ kind }, 0);
    m.workerDraining.set({ kind }, 0);
    m.jobsFinished.inc({ kind, outcome: 'succeeded', code: '' }, 0);
    m.jobsFinished.inc({ kind, outcome: 'canceled', code: 'canceled' }, 0);
    for (const code of codes.filter((c) => c !== 'canceled'))
      m.jobsFinished.inc({ kind, outcome: 'failed', code }, 0);
    for (const code of retryable) m.jobsRetried.inc({ kind, code }, 0);
    m.queueWait.zero({ kind });
    for (const format of JOB_FORMATS[kind])
      for (const outcome of ATTEMPT_OUTCOMES) m.jobDuration.zero({ kind, format, outcome });
    for (const pass of FFMPEG_PASSES) {
      if (pass === 'analyse' && kind === 'stream') continue;
      m.ffmpegSpeed.zero({ kind, pass });
      m.ffmpegMediaSeconds.inc({ kind, pass }, 0);
      m.ffmpegSeconds.inc({ kind, pass }, 0);
    }
  }
  for (const reason of DEAD_LETTER_REASONS) m.eventsDeadLettered.inc({ reason }, 0);
  for (const outcome of CALLBACK_OUTCOMES) m.callbacks.inc({ outcome }, 0);
  for (const outcome of CALLBACK_ATTEMPT_OUTCOMES) m.callbackDuration.zero({ outcome });
  for (const result of CALLBACK_ATTEMPT_RESULTS) m.callbackAttempts.inc({ result }, 0);
  for (const direction of ['in', 'out'])
    for (const store of STORE_KINDS) m.bytesTransferred.inc({ direction, store }, 0);
}

function registerMetrics(registry: Registry): Metrics {
  const registers = [registry];
  const waitingSources: Metrics['waitingSources'] = new Set();
  return {
    waitingSources,
    registry,
    ...httpMetrics(registers),
    ...jobMetrics(registers),
    ...jobTimeMetrics(registers, waitingSources),
    ...throughputMetrics(registers),
    ...ffmpegMetrics(registers),
    ...eventMetrics(registers),
    ...callbackMetrics(registers),
    ...buildMetrics(registers),
  };
}

/** HTTP requests answered by this process. */
function httpMetrics(registers: Registry[]): Pick<Metrics, 'httpRequests' | 'httpDuration'> {
  return {
    httpRequests: new Counter({
      name: `${PREFIX}http_requests_total`,
      help: 'HTTP requests answered.',
      labelNames: ['route', 'method', 'status'],
      registers,
    }),
    httpDuration: new Histogram({
      name: `${PREFIX}http_request_duration_seconds`,
      help: 'Time to answer an HTTP request.',
      labelNames: ['route', 'method'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
  };
}

/** Jobs from submission to their end, counted. */
function jobMetrics(
  registers: Registry[],
): Pick<Metrics, 'jobsSubmitted' | 'jobsStarted' | 'jobsFinished' | 'jobsMoved' | 'jobsRetried'> {
  return {
    jobsSubmitted: new Counter({
      name: `${PREFIX}jobs_submitted_total`,
      help: 'Jobs accepted by the ingress.',
      labelNames: ['kind'],
      registers,
    }),
    jobsStarted: new Counter({
      name: `${PREFIX}job_attempts_total`,
      help: 'Job attempts started by a worker (a job retried n times counts n + 1).',
      labelNames: ['kind'],
      registers,
    }),
    jobsFinished: new Counter({
      name: `${PREFIX}jobs_finished_total`,
      help: 'Jobs that ended, once each: succeeded, failed (with its error code) or canceled.',
      labelNames: ['kind', 'outcome', 'code'],
      registers,
    }),
    jobsMoved: new Counter({
      name: `${PREFIX}jobs_moved_total`,
      help: 'Attempts moved to another worker before their work began (each started again there).',
      labelNames: ['kind'],
      registers,
    }),
    jobsRetried: new Counter({
      name: `${PREFIX}jobs_retried_total`,
      help: 'Job attempts that failed and were scheduled again.',
      labelNames: ['kind', 'code'],
      registers,
    }),
  };
}

/** Jobs in time: how long attempts take, run and wait, and what waits now. */
function jobTimeMetrics(
  registers: Registry[],
  waitingSources: Metrics['waitingSources'],
): Pick<
  Metrics,
  'jobDuration' | 'jobsInProgress' | 'workerDraining' | 'queueWait' | 'jobsWaiting'
> {
  return {
    jobDuration: new Histogram({
      name: `${PREFIX}job_attempt_duration_seconds`,
      help: 'Wall time of one job attempt, by kind, output format and how it ended: succeeded, failed (the job failed), retried (another attempt follows), canceled.',
      labelNames: ['kind', 'format', 'outcome'],
      buckets: [1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    }),
    jobsInProgress: new Gauge({
      name: `${PREFIX}jobs_in_progress`,
      help: 'Job attempts running now.',
      labelNames: ['kind'],
      registers,
    }),
    workerDraining: new Gauge({
      name: `${PREFIX}worker_draining`,
      help: '1 while the worker is stopping: it takes no new job, and its running ones finish within SHUTDOWN_GRACE_MS or are handed back.',
      labelNames: ['kind'],
      registers,
    }),
    queueWait: new Histogram({
      name: `${PREFIX}job_queue_wait_seconds`,
      help: 'Time from acknowledgement (or a retry falling due) to the start of a job attempt.',
      labelNames: ['kind'],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    }),
    jobsWaiting: new Gauge({
      name: `${PREFIX}jobs_waiting`,
      help: 'Jobs accepted and not started (queued), per organisation and kind, as the status view of this process sees them.',
      labelNames: ['org', 'kind'],
      registers,
      collect() {
        this.reset();
        for (const read of waitingSources)
          for (const { orgId, kind, count } of read()) this.set({ org: orgId, kind }, count);
      },
    }),
  };
}

/** What flows through: records behind, media produced, bytes moved. */
function throughputMetrics(
  registers: Registry[],
): Pick<Metrics, 'consumerLag' | 'mediaSeconds' | 'bytesTransferred'> {
  return {
    consumerLag: new Gauge({
      name: `${PREFIX}consumer_lag_records`,
      help: 'Records of a partition not yet handled by this member (high watermark minus committed offset).',
      labelNames: ['group', 'topic', 'partition'],
      registers,
    }),
    mediaSeconds: new Counter({
      name: `${PREFIX}processed_seconds_total`,
      help: 'Seconds of output media produced.',
      labelNames: ['kind'],
      registers,
    }),
    bytesTransferred: new Counter({
      name: `${PREFIX}transfer_bytes_total`,
      help: 'Bytes downloaded (in) and uploaded (out), by store (http, s3, azure, gcs).',
      labelNames: ['direction', 'store'],
      registers,
    }),
  };
}

/** ffmpeg runs: speed, media and wall time, by job kind and pass. */
function ffmpegMetrics(
  registers: Registry[],
): Pick<Metrics, 'ffmpegSpeed' | 'ffmpegMediaSeconds' | 'ffmpegSeconds'> {
  return {
    ffmpegSpeed: new Histogram({
      name: `${PREFIX}ffmpeg_speed_ratio`,
      help: 'Seconds of media one ffmpeg run went through per second of wall time (1 = realtime).',
      labelNames: ['kind', 'pass'],
      buckets: [0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128],
      registers,
    }),
    ffmpegMediaSeconds: new Counter({
      name: `${PREFIX}ffmpeg_media_seconds_total`,
      help: 'Seconds of media ffmpeg went through (divide by media_ffmpeg_seconds_total for the speed).',
      labelNames: ['kind', 'pass'],
      registers,
    }),
    ffmpegSeconds: new Counter({
      name: `${PREFIX}ffmpeg_seconds_total`,
      help: 'Wall time ffmpeg ran.',
      labelNames: ['kind', 'pass'],
      registers,
    }),
  };
}

/** Events on the bus. */
function eventMetrics(
  registers: Registry[],
): Pick<Metrics, 'eventsPublished' | 'eventsDeadLettered'> {
  return {
    eventsPublished: new Counter({
      name: `${PREFIX}events_published_total`,
      help: 'Events accepted by the bus.',
      labelNames: ['type'],
      registers,
    }),
    eventsDeadLettered: new Counter({
      name: `${PREFIX}events_dead_lettered_total`,
      help: 'Records sent to the dead-letter topic.',
      labelNames: ['reason'],
      registers,
    }),
  };
}

/** Callbacks: their outcomes, attempts and time. */
function callbackMetrics(
  registers: Registry[],
): Pick<Metrics, 'callbacks' | 'callbackDuration' | 'callbackAttempts'> {
  return {
    callbacks: new Counter({
      name: `${PREFIX}callbacks_total`,
      help: 'Callbacks by outcome: delivered, retried (an attempt failed, another is scheduled), given_up, deferred (its host was at its in-flight bound), stopped (its job was canceled after it ended).',
      labelNames: ['outcome'],
      registers,
    }),
    callbackDuration: new Histogram({
      name: `${PREFIX}callback_duration_seconds`,
      help: 'Time to one callback attempt answered.',
      labelNames: ['outcome'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10],
      registers,
    }),
    callbackAttempts: new Counter({
      name: `${PREFIX}callback_attempts_total`,
      help: 'Callback attempts by what they met: 2xx, 4xx, 5xx (status class of the answer), timeout, network_error, refused_address.',
      labelNames: ['result'],
      registers,
    }),
  };
}

/** The running version. */
function buildMetrics(registers: Registry[]): Pick<Metrics, 'buildInfo'> {
  return {
    buildInfo: new Gauge({
      name: `${PREFIX}build_info`,
      help: 'Always 1; its labels name the running version of the service and of Node.',
      labelNames: ['version', 'node_version'],
      registers,
    }),
  };
}
