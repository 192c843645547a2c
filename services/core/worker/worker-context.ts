import type { EventBus } from '../bus/event-bus.ts';
import type { EventCodec } from '../events/event-codec.ts';
import type { JobRequested } from '../contracts/types.generated.ts';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { TraceContext, Tracing } from '../observability/tracing.ts';
import type { SealingKey } from '../crypto/secret-box.ts';
import type { Clock } from '../time.ts';
import type { JobCancels } from '../status/job-cancels.ts';
import type { JobOutcomes } from '../status/job-outcomes.ts';
import type { AdmissionRules } from './admit-job.ts';
import type { JobHandler, JobKind } from './job-handler.ts';
import type { RunLedger } from './run-ledger.ts';
import type { RunningJobs } from './running-jobs.ts';
import type { Semaphore } from '../scheduling/semaphore.ts';

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
  /**
   * The slots the jobs' work runs in (a media worker's CPU slots), when there are fewer than
   * `concurrency`: the bus then offers this worker records only while one is free.
   */
  workSlots?: Semaphore;
  handler: JobHandler;
}

/**
 * What the records of one worker share: its deps and options, the cancels and outcomes read so
 * far, and the runs it made and makes.
 */
export interface WorkerContext {
  deps: JobWorkerDeps;
  options: JobWorkerOptions;
  cancels: JobCancels;
  outcomes: JobOutcomes;
  ledger: RunLedger;
  running: RunningJobs;
}

/** One attempt of one job on this worker. */
export interface AttemptContext {
  worker: WorkerContext;
  job: JobRequested;
  /** The topic and event id of the request record. */
  record: { topic: string; eventId: string };
  /** The worker's log with the job's id, kind, attempt and trace. */
  log: Logger;
  trace: TraceContext;
}
