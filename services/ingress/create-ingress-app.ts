import Koa, { type Context } from 'koa';
import Router from '@koa/router';
import { inSpan, extractTraceContext, SpanKind } from '../core/observability/tracing.ts';
import { authorizeJobRequest } from './authenticate.ts';
import type { JobType } from './build-job-request.ts';
import { cancelJob } from './cancel-job.ts';
import { countRequests } from './count-requests.ts';
import { getJob } from './get-job.ts';
import { handleErrors } from './handle-errors.ts';
import { createIdempotency } from './idempotency.ts';
import type { IngressContext, IngressDeps } from './ingress-context.ts';
import { logConnectionErrors } from './log-connection-errors.ts';
import { addOpsRoutes } from './ops-routes.ts';
import { createRateLimiter } from './rate-limit.ts';
import { redeliverCallback } from './redeliver-callback.ts';
import { submitJob } from './submit-job.ts';
import { unmatchedAsErrors } from './unmatched-as-errors.ts';
import { addWatermarkRoutes } from './watermark-routes.ts';

const JOB_ROUTES: Record<string, JobType> = {
  '/transcode': 'transcode',
  '/summary/gif': 'summary/gif',
  '/summary/mp4': 'summary/mp4',
  '/streams': 'stream',
};

/** The HTTP API as a Koa app; `app.callback()` serves it. */
export function createIngressApp(deps: IngressDeps): Koa {
  const app = new Koa();
  const router = new Router();
  const ingress: IngressContext = {
    deps,
    idempotency: createIdempotency({
      statusView: deps.statusView,
      clock: deps.clock,
      secret: deps.sealingKey.key,
    }),
    limitRate: createRateLimiter(deps.limits),
  };
  const authorized = (ctx: Context) =>
    authorizeJobRequest(ctx, deps.authenticate, ingress.limitRate);

  for (const [path, type] of Object.entries(JOB_ROUTES))
    router.post(path, (ctx) =>
      inSpan(
        deps.tracer,
        `POST ${path}`,
        extractTraceContext(ctx.headers),
        (trace) => submitJob(ctx, ingress, { type, trace }),
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
  addOpsRoutes(router, deps);

  app.on('error', logConnectionErrors(deps.log));
  app.use(countRequests(deps.metrics, router));
  app.use(handleErrors(deps.log));
  app.use(unmatchedAsErrors);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
