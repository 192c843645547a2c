import type { BusRecord } from '../bus/event-bus.ts';
import type { TraceContext } from '../observability/tracing.ts';
import { readJobOwner, type Refusal } from './admit-job.ts';
import { deadLetter } from './dead-letter.ts';
import { publishJobEvent } from './publish-job-event.ts';
import type { WorkerContext } from './worker-context.ts';

/** A request record that will never run, why, and what it carried (not validated). */
export interface RefusedRecord {
  record: BusRecord;
  refusal: Refusal;
  data: unknown;
  /** The producer's trace context. */
  trace: TraceContext;
}

/**
 * A request that will never run: dead-lettered with the reason and, when its data still names a
 * job and an organisation, failed as that job, so its producer sees why in the job's status and
 * in the failure callback. The failed event is published first: if the dead letter cannot be,
 * the record comes again and yields the same event id.
 */
export async function refuseRecord(worker: WorkerContext, refused: RefusedRecord): Promise<void> {
  const { deps, options } = worker;
  const { record, refusal, data, trace } = refused;
  const owner = readJobOwner(data, options.kind, options.admission.addressPolicy);
  if (owner) {
    const { failureUrl, ...who } = owner;
    const message =
      refusal.message.length > 2000 ? `${refusal.message.slice(0, 1999)}…` : refusal.message;
    await publishJobEvent(deps, trace, 'media.job.failed', {
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
