import { topics } from '../bus/event-bus.ts';
import type { EventDataOf } from '../events/event-codec.ts';
import type { JobRequested } from '../contracts/types.generated.ts';
import { withTraceHeaders, type TraceContext } from '../observability/tracing.ts';
import type { JobWorkerDeps } from './worker-context.ts';

/** Publishes one event of a job to the job events topic, in the job's trace. */
export async function publishJobEvent<T extends keyof EventDataOf>(
  deps: Pick<JobWorkerDeps, 'bus' | 'codec' | 'metrics'>,
  trace: TraceContext,
  type: T,
  data: EventDataOf[T],
): Promise<void> {
  await deps.bus.publish([
    withTraceHeaders(deps.codec.encode(topics.jobEvents, type, data), trace),
  ]);
  deps.metrics.eventsPublished.inc({ type });
}

/** The fields that name a job's attempt in every event of it. */
export function jobIdentity(
  job: JobRequested,
): Pick<JobRequested, 'jobId' | 'kind' | 'orgId' | 'attempt'> {
  return { jobId: job.jobId, kind: job.kind, orgId: job.orgId, attempt: job.attempt };
}
