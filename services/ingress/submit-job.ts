import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { BusUncertainError, BusUnavailableError, requestTopicOf } from '../core/bus/event-bus.ts';
import type { Checked, Contracts } from '../core/contracts/load-contracts.ts';
import type { JobAck, JobRequested } from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import {
  inSpan,
  SpanKind,
  withTraceHeaders,
  type TraceContext,
} from '../core/observability/tracing.ts';
import { nowIsoMicros } from '../core/time.ts';
import {
  buildJobRequest,
  refuseLocalUrls,
  refuseCrossFieldProblems,
  refuseOverPixelBudget,
  type JobType,
  type ValidRequest,
} from './build-job-request.ts';
import { requestIdOf } from './handle-errors.ts';
import type { Admission } from './idempotency.ts';
import type { IngressContext, IngressDeps } from './ingress-context.ts';
import { refuseOverActiveJobs } from './rate-limit.ts';
import { readJsonBody } from './read-json-body.ts';

/** One submission: the job type its route takes, and the trace of the request. */
export interface Submission {
  type: JobType;
  trace: TraceContext;
}

/**
 * POST /transcode, /summary/gif, /summary/mp4 and /streams: authenticates the key in the body,
 * validates, answers a repeated Idempotency-Key with the first answer, and queues the job.
 */
export async function submitJob(
  ctx: Context,
  ingress: IngressContext,
  { type, trace }: Submission,
): Promise<void> {
  const { deps, idempotency } = ingress;
  const idempotencyKey = idempotency.keyOf(ctx);
  const body = await readJsonBody(ctx, deps.maxBodyBytes);
  const { orgId, request } = await inSpan(deps.tracer, 'validate', trace, async () =>
    validateSubmission(ctx, ingress, type, body),
  );

  const admission: Admission | undefined = idempotencyKey
    ? await idempotency.admit(orgId, idempotencyKey, type, body)
    : undefined;
  if (admission?.repeat) {
    deps.log.info('job.repeat_answered', { jobId: admission.repeat.id, type, orgId });
    ctx.body = admission.repeat;
    return;
  }
  try {
    refuseOverActiveJobs(deps.statusView.activeJobs(orgId), deps.limits, ctx);
    const createdAt = nowIsoMicros(deps.clock);
    const job = buildJobRequest(
      request,
      { jobId: admission?.jobId ?? randomUUID(), orgId, submittedAt: createdAt },
      deps.sealingKey,
    );
    if (admission) job.requestDigest = admission.requestDigest;
    await publishRequest(ctx, deps, job, trace);
    const ack: JobAck = { id: job.jobId, status: 'queued', createdAt };
    ctx.body = ack;
  } finally {
    admission?.done();
  }
}

/** The organisation of the body's API key (its rate spent) and the request, checked. */
function validateSubmission(
  ctx: Context,
  { deps, limitRate }: IngressContext,
  type: JobType,
  body: Record<string, unknown>,
): { orgId: string; request: ValidRequest } {
  const apiKey = body['apiKey'];
  if (apiKey === undefined) throw new MediaError('unauthorized', 'apiKey is required');
  const org = deps.authenticate(apiKey);
  if (!org || typeof apiKey !== 'string')
    throw new MediaError('unauthorized', 'apiKey is not valid');
  limitRate(apiKey, ctx);
  const request = checkBody(deps.contracts, type, body);
  refuseOverPixelBudget(request.body, deps.maxPixels);
  refuseCrossFieldProblems(request.body);
  refuseLocalUrls(request.body, deps.addressPolicy);
  return { orgId: org, request };
}

/** The body checked against its route's contract. */
function checkBody(contracts: Contracts, type: JobType, body: unknown): ValidRequest {
  switch (type) {
    case 'transcode':
      return { type, body: valid(contracts.transcodeRequest(body)) };
    case 'stream':
      return { type, body: valid(contracts.streamRequest(body)) };
    default:
      return { type, body: valid(contracts.summaryRequest(body)) };
  }
}

function valid<T>(checked: Checked<T>): T {
  if (!checked.ok) throw new MediaError('invalid_request', checked.message);
  return checked.value;
}

async function publishRequest(
  ctx: Context,
  deps: IngressDeps,
  job: JobRequested,
  trace: TraceContext,
): Promise<void> {
  const type = job.kind === 'summary' ? `summary/${job.summary?.format}` : job.kind;
  // A random event id: the workers tell a duplicate request of one job (two ingress copies
  // answering one Idempotency-Key at once) from a redelivery of the same record by it.
  const topic = requestTopicOf[job.kind];
  const record = deps.codec.encode(topic, 'media.job.requested', job, randomUUID());
  try {
    await inSpan(
      deps.tracer,
      `publish ${topic}`,
      trace,
      (publishing) => deps.bus.publish([withTraceHeaders(record, publishing)]),
      {
        kind: SpanKind.PRODUCER,
        attributes: { 'messaging.destination.name': topic, 'media.job.id': job.jobId },
      },
    );
  } catch (error) {
    if (!(error instanceof BusUnavailableError)) throw error;
    const uncertain = error instanceof BusUncertainError;
    deps.log.warn(uncertain ? 'job.queued_uncertain' : 'job.not_queued', {
      requestId: requestIdOf(ctx),
      jobId: job.jobId,
      kind: job.kind,
      error,
    });
    // The record went to the brokers and may be written after this answer: saying "nothing was
    // queued" could be false, so the caller hears which job may run (docs/errors.md).
    if (uncertain)
      throw new MediaError(
        'bus_uncertain',
        'the event bus did not confirm the job in time; it may have been queued: retry with the same Idempotency-Key (never a second job) or see GET /jobs/:id',
        { jobId: job.jobId, cause: error },
      );
    throw new MediaError(
      'bus_unavailable',
      'the job could not be queued because the event bus is unavailable; nothing was queued, try again',
      { cause: error },
    );
  }
  deps.statusView.applyRequested(job, job.submittedAt);
  deps.metrics.jobsSubmitted.inc({ kind: job.kind });
  deps.metrics.eventsPublished.inc({ type: 'media.job.requested' });
  deps.log.info('job.queued', {
    requestId: requestIdOf(ctx),
    jobId: job.jobId,
    type,
    orgId: job.orgId,
  });
}
