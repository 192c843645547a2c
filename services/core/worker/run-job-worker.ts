import {
  requestTopicOf,
  type BusRecord,
  type DeliveryContext,
  type Subscription,
} from '../bus/event-bus.ts';
import { HandBack } from '../bus/hand-back.ts';
import { readCloudEvent } from '../events/read-cloudevent.ts';
import {
  extractTraceContext,
  inSpan,
  markFailed,
  SpanKind,
  traceLogFields,
  tracingOff,
  type TraceContext,
} from '../observability/tracing.ts';
import type { JobRequested } from '../contracts/types.generated.ts';
import { startJobCancels } from '../status/job-cancels.ts';
import { startJobOutcomes } from '../status/job-outcomes.ts';
import { admissionRefusal } from './admit-job.ts';
import { refuseRecord } from './refuse-record.ts';
import { runAttempt } from './run-attempt.ts';
import { createRunLedger } from './run-ledger.ts';
import { createRunningJobs, type RunningJobs } from './running-jobs.ts';
import type { Semaphore } from '../scheduling/semaphore.ts';
import type {
  AttemptContext,
  JobWorkerDeps,
  JobWorkerOptions,
  WorkerContext,
} from './worker-context.ts';

/**
 * The one consumer loop of the workers: decode and validate, run the handler, publish exactly
 * one outcome (succeeded, failed, or the next attempt), and only then let the bus commit.
 */
export async function startJobWorker(
  deps: JobWorkerDeps,
  options: JobWorkerOptions,
): Promise<Subscription> {
  const topic = requestTopicOf[options.kind];
  // Cancels are read first, so that a restarted worker knows the old ones before its first job.
  const cancels = await startJobCancels(deps);
  // Outcomes too: an attempt that ended elsewhere (or before a restart) is not run again.
  const outcomes = await startJobOutcomes(deps);
  const worker: WorkerContext = {
    deps,
    options,
    cancels,
    outcomes,
    ledger: createRunLedger(),
    running: createRunningJobs(),
  };
  const jobs = await deps.bus.subscribe({
    group: options.group,
    topics: [topic],
    concurrency: options.concurrency,
    fromBeginning: true,
    handler: (record, delivery) => handleRecord(worker, record, delivery),
    fairness: {
      tenantOf: orgOfRecord,
      ...(options.orgWeights ? { weights: options.orgWeights } : {}),
      ...(options.orgMaxRunning ? { maxRunningPerTenant: options.orgMaxRunning } : {}),
    },
    onLag: (topic, partition, records) =>
      deps.metrics.consumerLag.set({ group: options.group, topic, partition }, records),
    ...(options.workSlots ? { freeForWork: freeForWork(options.workSlots, worker.running) } : {}),
  });
  return {
    async close(graceMs = 0) {
      const drained = worker.running.drain(deps.log, deps.metrics, options, graceMs);
      await jobs.close(graceMs);
      drained();
      await Promise.all([cancels.close(), outcomes.close()]);
    },
  };
}

/** Work slots free now, less those the jobs not yet at work will take. */
function freeForWork(slots: Semaphore, running: RunningJobs): () => number {
  return () => slots.size - slots.inUse - running.notBegun();
}

/**
 * The organisation a job record is fair-shared under, read without validating (validation comes
 * when it runs). A record that names none shares one tenant with the other unreadable ones.
 */
export function orgOfRecord(record: BusRecord): string {
  const read = readCloudEvent(record);
  const data = read.ok ? read.event['data'] : undefined;
  const org = data && typeof data === 'object' ? (data as { orgId?: unknown }).orgId : undefined;
  return typeof org === 'string' ? org : '';
}

/** One request record: refused (never to run), or run as an attempt in a span of its own. */
async function handleRecord(
  worker: WorkerContext,
  record: BusRecord,
  delivery: DeliveryContext,
): Promise<void> {
  const { deps, options } = worker;
  // The producer's trace context (the ingress's publish span, or whoever produced the record).
  const trace = extractTraceContext(record.headers);
  const decoded = deps.codec.decode(record);
  if (!decoded.ok) {
    const refusal = { reason: 'invalid_event', message: decoded.reason } as const;
    return refuseRecord(worker, { record, refusal, data: decoded.data, trace });
  }
  const { event } = decoded;
  if (event.type !== 'media.job.requested' || event.data.kind !== options.kind) {
    const message = `${event.type} is not a ${options.kind} request`;
    const refusal = { reason: 'unexpected_event', message } as const;
    return refuseRecord(worker, { record, refusal, data: event.data, trace });
  }
  // job.notBefore is information only: the bus did not deliver the record before it.
  const job = event.data;
  const refusal = admissionRefusal(job, options.admission, deps.sealingKeys);
  if (refusal) return refuseRecord(worker, { record, refusal, data: job, trace });
  if (delivery.signal.aborted) throw new HandBack('before start');
  await runInJobSpan(worker, job, { topic: record.topic, eventId: event.id }, trace, delivery);
}

/** Runs the attempt in a consumer span of its own, below the producer's. */
function runInJobSpan(
  worker: WorkerContext,
  job: JobRequested,
  source: { topic: string; eventId: string },
  trace: TraceContext,
  delivery: DeliveryContext,
): Promise<void> {
  return inSpan(
    (worker.deps.tracing ?? tracingOff).tracer,
    `${job.kind} job`,
    trace,
    (jobTrace, span) =>
      runAttempt(attemptOf(worker, job, source, jobTrace), delivery).then((error) => {
        if (error) markFailed(span, error);
      }),
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.destination.name': source.topic,
        'media.job.id': job.jobId,
        'media.job.kind': job.kind,
        'media.job.attempt': job.attempt,
      },
    },
  );
}

function attemptOf(
  worker: WorkerContext,
  job: JobRequested,
  record: { topic: string; eventId: string },
  trace: TraceContext,
): AttemptContext {
  const log = worker.deps.log.child({
    jobId: job.jobId,
    kind: job.kind,
    attempt: job.attempt,
    ...traceLogFields(trace),
  });
  return { worker, job, record, log, trace };
}
