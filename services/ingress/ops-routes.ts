import type Router from '@koa/router';
import { MediaError } from '../core/errors.ts';
import type { IngressDeps } from './ingress-context.ts';

/** `GET /healthz`, `/readyz` (503 while stopping or without the bus) and `/openapi.json`. */
export function addOpsRoutes(
  router: Router,
  deps: Pick<IngressDeps, 'bus' | 'contracts' | 'isDraining'>,
): void {
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
}
