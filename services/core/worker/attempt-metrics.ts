import type { JobRequested } from '../contracts/types.generated.ts';
import type { RunOutcome } from './run-handler.ts';

/** The output format of a job (a label of job_attempt_duration_seconds: a GIF and an MP4 summary cost differently). */
export function jobFormat(job: JobRequested): string {
  return job.transcode?.container ?? job.summary?.format ?? (job.stream ? 'cmaf' : 'unknown');
}

/** How an attempt ended, for its duration: a retried attempt is not the job's failure. */
export function attemptOutcome(run: RunOutcome, job: JobRequested, maxAttempts: number): string {
  if (run.handedBack || !run.error) return 'succeeded';
  if (run.error.code === 'canceled') return 'canceled';
  return run.error.retryable && job.attempt < maxAttempts ? 'retried' : 'failed';
}

/**
 * Time from acknowledgement to start of this attempt, s: from the submission for the first
 * attempt, from the due time of a scheduled retry for the others (its wait before is backoff).
 */
export function queueWaitSeconds(job: JobRequested, now: Date): number {
  const since = Date.parse(job.attempt > 1 && job.notBefore ? job.notBefore : job.submittedAt);
  return Number.isFinite(since) ? Math.max(0, (now.getTime() - since) / 1000) : 0;
}
