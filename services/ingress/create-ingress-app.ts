import { randomUUID } from 'node:crypto';
import Koa, { type Context, type Next } from 'koa';
import Router from '@koa/router';
import { BusUnavailableError, requestTopicOf, type EventBus } from '../core/bus/event-bus.ts';
import { firstDeliveryRecord } from '../core/callbacks/callback-request.ts';
import type { Contracts } from '../core/contracts/load-contracts.ts';
import type {
  CallbackRedelivery,
  JobAck,
  JobRequested,
} from '../core/contracts/types.generated.ts';
import type { SealingKey } from '../core/crypto/secret-box.ts';
import { MediaError } from '../core/errors.ts';
import type { EventCodec } from '../core/events/event-codec.ts';
import type { JobStatusView } from '../core/status/job-status-view.ts';
import type { Logger } from '../core/observability/logger.ts';
import type { AddressPolicy } from '../core/net/address-policy.ts';
import type { Metrics } from '../core/observability/metrics.ts';
import {
  extractTraceContext,
  inSpan,
  SpanKind,
  withTraceHeaders,
  type TraceContext,
  type Tracer,
} from '../core/observability/tracing.ts';
import { nowIsoMicros, type Clock } from '../core/time.ts';
import { organisationOf, type Authenticator } from './authenticate.ts';
import {
  buildJobRequest,
  refuseLocalUrls,
  refuseOverPixelBudget,
  type JobType,
} from './build-job-request.ts';
import { cancelJob } from './cancel-job.ts';
import { handleErrors, requestIdOf } from './handle-errors.ts';
import { createIdempotency, type Admission } from './idempotency.ts';
import { createRateLimiter, refuseOverActiveJobs, type IngressLimits } from './rate-limit.ts';
import { readJsonBody } from './read-json-body.ts';
import { addWatermarkRoutes, type WatermarkRoutesOptions } from './watermark-routes.ts';

export interface IngressDeps {
  bus: EventBus;
  codec: EventCodec;
  contracts: Contracts;
  authenticate: Authenticator;
  statusView: JobStatusView;
  metrics: Metrics;
  log: Logger;
  /** Spans of submissions; a caller's `traceparent` is their parent and travels with the job. */
  tracer: Tracer;
  clock: Clock;
  sealingKey: SealingKey;
  /** Largest body accepted, in bytes. */
  maxBodyBytes: number;
  /** Which addresses caller URLs may name (refused early here, again at connect time by workers). */
  addressPolicy: AddressPolicy;
  /** Largest output frame area, in pixels (MAX_PIXELS); an explicit width × height over it is refused. */
  maxPixels: number;
  /** The watermark library behind /watermarks and its upload limits. */
  watermarks: WatermarkRoutesOptions;
  /** Request rate per API key and active jobs per organisation. */
  limits: IngressLimits;
  /** True once the process is stopping: `/readyz` is then 503 (default: never). */
  isDraining?: () => boolean;
}

/** What the handlers share beyond the deps: built once per app. */
interface IngressParts {
  idempotency: ReturnType<typeof createIdempotency>;
  limitRate: ReturnType<typeof createRateLimiter>;
}

const JOB_ROUTES: Record<string, JobType> = {
  '/transcode': 'transcode',
  '/summary/gif': 'summary/gif',
  '/summary/mp4': 'summary/mp4',
  '/streams': 'stream',
};
/** Connection failures a client causes: resets, early ends, requests the parser cannot read. */
const CLIENT_SIDE_CODES =
  /^(ECONNRESET|EPIPE|ECONNABORTED|ERR_STREAM_PREMATURE_CLOSE|HPE_[A-Z_]+)$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The HTTP API as a Koa app; `app.callback()` serves it. */
export function createIngressApp(deps: IngressDeps): Koa {
  const app = new Koa();
  const router = new Router();
  const parts: IngressParts = {
    idempotency: createIdempotency({
      statusView: deps.statusView,
      clock: deps.clock,
      secret: deps.sealingKey.key,
    }),
    limitRate: createRateLimiter(deps.limits),
  };
  const authorized = (ctx: Context) => authorizeJobRequest(ctx, deps, parts);

  for (const [path, type] of Object.entries(JOB_ROUTES))
    router.post(path, (ctx) =>
      inSpan(
        deps.tracer,
        `POST ${path}`,
        extractTraceContext(ctx.headers),
        (trace) => submitJob(ctx, type, deps, parts, trace),
        {
          kind: SpanKind.SERVER,
          attributes: { 'http.request.method': 'POST', 'http.route': path },
        },
      ),
    );
  router.get('/jobs/:id', (ctx) => getJob(ctx, deps, authorized(ctx)));
  router.post('/jobs/:id/cancel', (ctx) => cancelJob(ctx, deps, authorized(ctx)));
  router.post('/jobs/:id/callbacks/redeliver', (ctx) =>
    redeliverCallback(ctx, deps, authorized(ctx)),
  );
  addWatermarkRoutes(router, deps.watermarks, deps);
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    if (deps.isDraining?.()) {
      ctx.status = 503;
      ctx.body = { error: 'the service is stopping' };
      return;
    }
    if (!(await deps.bus.isReady()))
      throw new MediaError('bus_unavailable', 'the event bus is not reachable');
    ctx.body = { status: 'ready' };
  });
  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = deps.contracts.openApi;
  });

  // Koa reports here what happens to a connection after the handlers (a client resetting it, a
  // body cut short); its default prints to stderr, outside the structured log.
  app.on('error', (error: unknown, ctx?: Context) => {
    const requestId = ctx ? requestIdOf(ctx) : undefined;
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && CLIENT_SIDE_CODES.test(code))
      deps.log.info('http.connection_closed_by_client', { requestId, code });
    else deps.log.error('http.connection_error', { requestId, error });
  });
  app.use(countRequests(deps.metrics, router));
  app.use(handleErrors(deps.log));
  app.use(unmatchedAsErrors);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

/**
 * The router answers a known path with another method by a bare 405 (or 501 for a method it
 * does not know) and its Allow header, and an unknown path by nothing: both become errors
 * in the contract's shape here.
 */
async function unmatchedAsErrors(ctx: Context, next: Next): Promise<void> {
  await next();
  if (ctx.status !== 404 && ctx.status !== 405 && ctx.status !== 501) return;
  if (ctx.body !== undefined && ctx.body !== null) return;
  // Koa's typing says string; an unset header is undefined.
  const allowed = String((ctx.response.get('Allow') as string | undefined) ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '' && m !== 'HEAD');
  if (allowed.length === 0)
    throw new MediaError('not_found', `no such path: ${ctx.method} ${ctx.path}`);
  throw new MediaError(
    'method_not_allowed',
    `${ctx.method} is not allowed on ${ctx.path}; use ${allowed.join(' or ')}`,
  );
}

async function submitJob(
  ctx: Context,
  type: JobType,
  deps: IngressDeps,
  parts: IngressParts,
  trace: TraceContext,
): Promise<void> {
  const idempotencyKey = parts.idempotency.keyOf(ctx);
  const body = await readJsonBody(ctx, deps.maxBodyBytes);
  const { orgId, request } = await inSpan(deps.tracer, 'validate', trace, async () => {
    const apiKey = body['apiKey'];
    if (apiKey === undefined) throw new MediaError('unauthorized', 'apiKey is required');
    const org = deps.authenticate(apiKey);
    if (!org || typeof apiKey !== 'string')
      throw new MediaError('unauthorized', 'apiKey is not valid');
    parts.limitRate(apiKey, ctx);
    const checked =
      type === 'transcode'
        ? deps.contracts.transcodeRequest(body)
        : type === 'stream'
          ? deps.contracts.streamRequest(body)
          : deps.contracts.summaryRequest(body);
    if (!checked.ok) throw new MediaError('invalid_request', checked.message);
    refuseOverPixelBudget(checked.value, deps.maxPixels);
    refuseLocalUrls(checked.value, deps.addressPolicy);
    return { orgId: org, request: checked.value };
  });

  const admission: Admission | undefined = idempotencyKey
    ? await parts.idempotency.admit(orgId, idempotencyKey, type, body)
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
      type,
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
    deps.log.warn('job.not_queued', {
      requestId: requestIdOf(ctx),
      jobId: job.jobId,
      kind: job.kind,
      error,
    });
    throw new MediaError(
      'bus_unavailable',
      'the job could not be queued because the event bus is unavailable; nothing was queued, try again',
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

type Authorized = ReturnType<typeof authorizeJobRequest>;

/** The organisation of the key in X-Api-Key or `Authorization: Bearer`, and the job id asked for. */
function authorizeJobRequest(
  ctx: Context,
  deps: IngressDeps,
  parts: IngressParts,
): { orgId: string; id: string; known: boolean; asked: string } {
  const orgId = organisationOf(ctx, deps.authenticate);
  const bearer = /^Bearer (.+)$/.exec(ctx.get('authorization'))?.[1];
  parts.limitRate(ctx.get('x-api-key') || bearer || '', ctx);
  const params = ctx['params'] as Record<string, string | undefined>;
  const asked = params['id'] ?? '';
  const id = asked.toLowerCase();
  return { orgId, id, known: UUID.test(id), asked };
}

async function getJob(ctx: Context, deps: IngressDeps, who: Authorized): Promise<void> {
  const { orgId, id, asked } = who;
  const status = who.known ? deps.statusView.get(id, orgId) : undefined;
  if (!status) throw new MediaError('not_found', `no job ${asked} for this API key`);
  ctx.body = status;
}

/** Queues the job's final callback again, with its webhook-id; attempts count from 1 again. */
async function redeliverCallback(ctx: Context, deps: IngressDeps, who: Authorized): Promise<void> {
  const { orgId, id, asked } = who;
  const status = who.known ? deps.statusView.get(id, orgId) : undefined;
  if (!status) throw new MediaError('not_found', `no job ${asked} for this API key`);
  if (status.status === 'queued' || status.status === 'processing')
    throw new MediaError(
      'job_not_finished',
      `job ${id} is ${status.status}; its callback is sent when it ends`,
    );
  const callback = deps.statusView.finalCallback(id, orgId);
  if (!callback)
    throw new MediaError(
      'no_callback',
      `job ${id} has no ${status.status === 'succeeded' ? 'successUrl' : 'failureUrl'} to call`,
    );
  try {
    await deps.bus.publish([
      withTraceHeaders(
        firstDeliveryRecord(deps.codec, callback, { jobId: id, orgId }),
        extractTraceContext(ctx.headers),
      ),
    ]);
  } catch (error) {
    if (!(error instanceof BusUnavailableError)) throw error;
    throw new MediaError(
      'bus_unavailable',
      'the callback could not be queued because the event bus is unavailable; try again',
    );
  }
  deps.log.info('callback.redelivery_queued', {
    requestId: requestIdOf(ctx),
    jobId: id,
    orgId,
    webhookId: callback.webhookId,
  });
  const body: CallbackRedelivery = { id, webhookId: callback.webhookId, state: 'pending' };
  ctx.status = 202;
  ctx.body = body;
}

/**
 * Requests by route, the route's pattern rather than its path (no job ids in labels). A known
 * path with another method (405) keeps its route; only a path no route has is `unmatched`.
 */
function countRequests(metrics: Metrics, router: Router) {
  const routeOf = (ctx: Context): string => {
    const matched = (ctx as Context & { _matchedRoute?: string })._matchedRoute;
    if (matched !== undefined) return String(matched);
    const [layer] = router.match(ctx.path, ctx.method).path;
    return layer ? String(layer.path) : 'unmatched';
  };
  return async (ctx: Context, next: () => Promise<unknown>): Promise<void> => {
    const end = metrics.httpDuration.startTimer();
    try {
      await next();
    } finally {
      const route = routeOf(ctx);
      end({ route: String(route), method: ctx.method });
      metrics.httpRequests.inc({
        route: String(route),
        method: ctx.method,
        status: String(ctx.status),
      });
    }
  };
}
