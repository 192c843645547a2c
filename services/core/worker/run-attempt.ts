import { HandBack } from '../bus/hand-back.ts';
import type { DeliveryContext } from '../bus/event-bus.ts';
import type { ErrorData } from '../errors.ts';
import { attemptOutcome, jobFormat, queueWaitSeconds } from './attempt-metrics.ts';
import { publishOutcome } from './publish-outcome.ts';
import { jobIdentity, publishJobEvent } from './publish-job-event.ts';
import { runHandler, type RunOutcome } from './run-handler.ts';
import { untilAcknowledged } from './until-acknowledged.ts';
import type { AttemptContext } from './worker-context.ts';

const CANCELED_BEFORE_START: ErrorData = {
  code: 'canceled',
  message: 'the job was canceled before it started',
  retryable: false,
};

/**
 * One attempt of a job, once: an attempt whose outcome is known (job-outcomes.ts), and a
 * duplicate request, are ignored; a job canceled before it started fails as canceled; otherwise it is
 * marked processing, run, and its one outcome published, tried until acknowledged (or, when the
 * worker lost the record, handed back). Resolves with the attempt's error.
 */
export async function runAttempt(
  attempt: AttemptContext,
  delivery: DeliveryContext,
): Promise<ErrorData | undefined> {
  const { worker, job, record, log } = attempt;
  const { deps } = worker;
  if (worker.outcomes.ended(job.jobId, job.attempt)) {
    log.info('job.outcome_exists', { eventId: record.eventId });
    return undefined;
  }
  if (!worker.ledger.claim(job.jobId, job.attempt, record.eventId)) {
    log.info('job.duplicate_request', { eventId: record.eventId });
    return undefined;
  }
  const persistent = untilAcknowledged(log, delivery.signal, deps.random);
  if (worker.cancels.isCanceled(job.jobId, job.orgId)) {
    await publishOutcome(attempt, { handedBack: false, error: CANCELED_BEFORE_START }, persistent);
    worker.outcomes.end(job.jobId, job.attempt);
    return CANCELED_BEFORE_START;
  }
  await markProcessing(attempt);
  deps.metrics.jobsInProgress.inc({ kind: job.kind });
  const started = performance.now();
  const running = worker.running.start(job);
  let outcome: RunOutcome | undefined;
  const run = await runHandler(attempt, delivery, running)
    .then((o) => (outcome = o))
    .finally(() => {
      deps.metrics.jobsInProgress.dec({ kind: job.kind });
      worker.running.end(job.jobId, running, outcome?.handedBack === true);
    });
  const seconds = (performance.now() - started) / 1000;

  if (run.handedBack) {
    // A job that only waited moves to a worker with free slots: nothing of its work is lost.
    if (running.movable) {
      log.info('job.moved', { reason: 'it waited; another worker runs it' });
      deps.metrics.jobsMoved.inc({ kind: job.kind });
    } else log.warn('job.handed_back', { reason: 'worker stopping or record lost' });
    throw new HandBack();
  }
  await publishOutcome(attempt, run, persistent);
  worker.outcomes.end(job.jobId, job.attempt);
  deps.metrics.jobDuration.observe(
    {
      kind: job.kind,
      format: jobFormat(job),
      outcome: attemptOutcome(run, job, worker.options.maxAttempts),
    },
    seconds,
  );
  return run.error;
}

async function markProcessing({ worker, job, log, trace }: AttemptContext): Promise<void> {
  const { deps } = worker;
  await publishJobEvent(deps, trace, 'media.job.processing', {
    ...jobIdentity(job),
    startedAt: deps.clock.now().toISOString(),
  });
  deps.metrics.jobsStarted.inc({ kind: job.kind });
  deps.metrics.queueWait.observe({ kind: job.kind }, queueWaitSeconds(job, deps.clock.now()));
  log.info('job.started', {});
}
