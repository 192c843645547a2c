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
   * The job only waits from now on (for its input, for a CPU slot). Until its work begins it may
   * move to a worker with free slots: it is aborted here, its download thrown away, and started
   * afresh there.
   */
  waiting(): void;
  /**
   * The job's work begins (it holds its CPU slot); from then on it stays. Resolves once it may
   * begin; rejects with the abort reason if the job moved meanwhile.
   */
  begin(): Promise<void>;
}

export type JobHandler = (job: JobRequested, context: JobContext) => Promise<JobResult>;
