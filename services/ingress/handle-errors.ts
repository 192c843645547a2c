import type { Context, Next } from 'koa';
import { MediaError } from '../core/errors.ts';
import type { Logger } from '../core/observability/logger.ts';
import { ClientClosedRequest } from './read-json-body.ts';

/** nginx's status for a request its client abandoned: counted apart from both 4xx and 5xx. */
const CLIENT_CLOSED_REQUEST = 499;

/** Koa's own HTTP errors (e.g. a client that aborts) carry a status. */
function httpStatusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : undefined;
}

/** The one error boundary: every failure becomes `{ "error": "..." }`; internals never leak. */
export function handleErrors(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
    } catch (error) {
      if (error instanceof MediaError) {
        ctx.status = error.status;
        ctx.body = { error: error.message };
        if (error.status >= 500)
          log.error('http.error', { code: error.code, path: ctx.path, error });
        return;
      }
      if (error instanceof ClientClosedRequest) {
        ctx.status = CLIENT_CLOSED_REQUEST;
        log.info('http.client_closed_request', { path: ctx.path });
        return;
      }
      const status = httpStatusOf(error);
      if (status !== undefined && status < 500) {
        ctx.status = status;
        ctx.body = {
          error: status === 400 ? 'the request could not be read' : 'the request was refused',
        };
        return;
      }
      log.error('http.unhandled_error', { path: ctx.path, error });
      ctx.status = 500;
      ctx.body = { error: 'internal error' };
    }
  };
}
