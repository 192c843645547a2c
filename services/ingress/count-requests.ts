import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { Metrics } from '../core/observability/metrics.ts';

/**
 * Requests by route, the route's pattern rather than its path (no job ids in labels). A known
 * path with another method (405) keeps its route; only a path no route has is `unmatched`.
 */
export function countRequests(metrics: Metrics, router: Router) {
  const routeOf = (ctx: Context): string => {
    const matched = (ctx as Context & { _matchedRoute?: string })._matchedRoute;
    if (matched !== undefined) return String(matched);
    const [layer] = router.match(ctx.path, ctx.method).path;
    return layer ? String(layer.path) : 'unmatched';
  };
  return async (ctx: Context, next: Next): Promise<void> => {
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
