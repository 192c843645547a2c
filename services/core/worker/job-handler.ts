import type { JobRequested, JobResult, SealedSecret } from '../contracts/types.generated.ts';
import type { Logger } from '../observability/logger.ts';
import type { ProgressStage } from './progress-reporter.ts';

export type JobKind = JobRequested['kind'];

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
  /**
   * Says the job only waits (for its input, for a CPU slot: true) or has begun its work (false).
   * Until its work begins it may move to a worker with free slots (it is aborted here, its
   * download thrown away, and started afresh there); once begun, it stays.
   */
  waiting(waiting: boolean): void;
}

export type JobHandler = (job: JobRequested, context: JobContext) => Promise<JobResult>;
