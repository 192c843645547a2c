import type { JobRequested } from '../contracts/types.generated.ts';
import type { ErrorData } from '../errors.ts';
import { withTraceHeaders } from '../observability/tracing.ts';
import { fullJitterBackoffMs } from '../time.ts';
import { jobIdentity, publishJobEvent } from './publish-job-event.ts';
import type { RunOutcome } from './run-handler.ts';
import type { UntilAcknowledged } from './until-acknowledged.ts';
import type { AttemptContext, JobWorkerOptions } from './worker-context.ts';

/**
 * The one outcome of an attempt that was not handed back: succeeded, the next attempt
 * scheduled (a retryable error with attempts left), or failed. Each publish goes through
 * `untilAcknowledged` (default: once), so a step acknowledged is not published again.
 */
export async function publishOutcome(
  attempt: AttemptContext,
  run: Exclude<RunOutcome, { handedBack: true }>,
  untilAcknowledged: UntilAcknowledged = (publish) => publish(),
): Promise<void> {
  const { worker, job, log, trace } = attempt;
  const { deps } = worker;
  const finishedAt = deps.clock.now().toISOString();
  const callbacks = job.callbacks ? { callbacks: job.callbacks } : {};
  if (run.result) {
    const result = run.result;
    await untilAcknowledged(() =>
      publishJobEvent(deps, trace, 'media.job.succeeded', {
        ...jobIdentity(job),
        finishedAt,
        ...callbacks,
        result,
      }),
    );
    deps.metrics.jobsFinished.inc({ kind: job.kind, outcome: 'succeeded', code: '' });
    deps.metrics.mediaSeconds.inc({ kind: job.kind }, run.result.durationSeconds);
    log.info('job.succeeded', { outputUrl: run.result.outputUrl, sizeBytes: run.result.sizeBytes });
    return;
  }
  const error: ErrorData = run.error ?? {
    code: 'internal',
    message: 'internal error',
    retryable: false,
  };
  if (error.retryable && job.attempt < worker.options.maxAttempts)
    return scheduleRetry(attempt, error, untilAcknowledged);
  await untilAcknowledged(() =>
    publishJobEvent(deps, trace, 'media.job.failed', {
      ...jobIdentity(job),
      finishedAt,
      ...callbacks,
      error,
    }),
  );
  const outcome = error.code === 'canceled' ? 'canceled' : 'failed';
  deps.metrics.jobsFinished.inc({ kind: job.kind, outcome, code: error.code });
  log.warn('job.failed', { code: error.code, message: error.message });
}

async function scheduleRetry(
  attempt: AttemptContext,
  error: ErrorData,
  untilAcknowledged: UntilAcknowledged,
): Promise<void> {
  const { worker, job, log, trace } = attempt;
  const { deps, options } = worker;
  const delay = retryDelayMs(options, job.attempt, deps.random ?? Math.random);
  const notBefore = deps.clock.now().getTime() + delay;
  // The bus holds the retry until it is due; no worker slot or partition waits for it.
  const next: JobRequested = {
    ...job,
    attempt: job.attempt + 1,
    notBefore: new Date(notBefore).toISOString(),
  };
  const retry = withTraceHeaders(
    { ...deps.codec.encode(attempt.record.topic, 'media.job.requested', next), notBefore },
    trace,
  );
  await untilAcknowledged(() => deps.bus.publish([retry]));
  // After the retry is on the bus, so a status that says "waiting for a retry" has one.
  await untilAcknowledged(() =>
    publishJobEvent(deps, trace, 'media.job.retry-scheduled', {
      ...jobIdentity(next),
      notBefore: next.notBefore ?? '',
      error: { code: error.code, message: error.message, retryable: true },
    }),
  );
  deps.metrics.jobsRetried.inc({ kind: job.kind, code: error.code });
  log.warn('job.retry_scheduled', { code: error.code, delayMs: delay });
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
