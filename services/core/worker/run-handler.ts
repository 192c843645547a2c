import type { DeliveryContext } from '../bus/event-bus.ts';
import type { JobResult } from '../contracts/types.generated.ts';
import { MediaError, toErrorData, type ErrorData } from '../errors.ts';
import { inSpan, tracingOff } from '../observability/tracing.ts';
import { open } from '../crypto/secret-box.ts';
import { progressReporter } from './progress-reporter.ts';
import { jobIdentity, publishJobEvent } from './publish-job-event.ts';
import type { RunningJob } from './running-jobs.ts';
import type { AttemptContext } from './worker-context.ts';

/** How the handler's run ended: handed back (its record comes again), or with a result or error. */
export type RunOutcome =
  { handedBack: true } | { handedBack: false; result?: JobResult; error?: ErrorData };

/**
 * Runs the job's handler once: aborted by the job's time-out, by the loss of its record (then
 * handed back) and by a cancel; its progress reported, throttled; any error as data.
 */
export async function runHandler(
  attempt: AttemptContext,
  delivery: DeliveryContext,
  running: RunningJob,
): Promise<RunOutcome> {
  const { worker, job, log, trace } = attempt;
  const { deps, options } = worker;
  const stops = abortOnStops(attempt, delivery);
  const progress = progressReporter({
    intervalMs: options.progressIntervalMs ?? 1000,
    job: jobIdentity(job),
    heartbeat: () => delivery.heartbeat(),
    publish: (data) => publishJobEvent(deps, trace, 'media.job.progress', data),
    log,
  });
  try {
    const result = await options.handler(job, {
      signal: stops.signal,
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
      waiting: () => {
        if (running.begun) return;
        running.movable = true;
        delivery.waitOnly();
      },
      begin: async () => {
        if (running.begun) return;
        await delivery.begin();
        // Moved to another member meanwhile: it runs there; nothing began here.
        stops.signal.throwIfAborted();
        running.begun = true;
        running.movable = false;
      },
    });
    return { handedBack: false, result };
  } catch (error) {
    if (delivery.signal.aborted) return { handedBack: true };
    const reason: unknown = stops.signal.aborted ? stops.signal.reason : error;
    if (!(reason instanceof MediaError)) log.error('job.internal_error', { error });
    return { handedBack: false, error: toErrorData(reason) };
  } finally {
    stops.release();
    progress.stop();
  }
}

/** The handler's signal: aborted with the reason of whichever stop comes first. */
function abortOnStops(
  { worker, job, log }: AttemptContext,
  delivery: DeliveryContext,
): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  const timeoutMs = worker.options.jobTimeoutMs;
  const timeout = setTimeout(
    () =>
      controller.abort(new MediaError('job_timeout', `the job ran longer than ${timeoutMs} ms`)),
    timeoutMs,
  );
  const onLost = (): void =>
    controller.abort(new MediaError('interrupted', 'the worker was stopped'));
  delivery.signal.addEventListener('abort', onLost, { once: true });
  const unwatch = worker.cancels.watch(job.jobId, job.orgId, () => {
    log.info('job.cancel_received', {});
    controller.abort(new MediaError('canceled', 'the job was canceled'));
  });
  return {
    signal: controller.signal,
    release: () => {
      clearTimeout(timeout);
      delivery.signal.removeEventListener('abort', onLost);
      unwatch();
    },
  };
}
