import { randomUUID } from 'node:crypto';
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

/** A caller's own request id is kept when it is short and plain; otherwise one is made. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The request's id (X-Request-Id), set by handleErrors; every log line of a request carries it. */
export function requestIdOf(ctx: Context): string | undefined {
  return (ctx.state as { requestId?: string }).requestId;
}

/**
 * The one error boundary: every failure becomes `{ "error": "..." }`; internals never leak.
 * It also gives each request its id, answered in `X-Request-Id`, so a caller can quote it.
 */
export function handleErrors(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const asked = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(asked) ? asked : randomUUID();
    (ctx.state as { requestId?: string }).requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } catch (error) {
      if (error instanceof MediaError) {
        ctx.status = error.status;
        ctx.body = error.jobId
          ? { error: error.message, jobId: error.jobId }
          : { error: error.message };
        if (error.status >= 500)
          log.error('http.error', { requestId, code: error.code, path: ctx.path, error });
        return;
      }
      if (error instanceof ClientClosedRequest) {
        ctx.status = CLIENT_CLOSED_REQUEST;
        log.info('http.client_closed_request', { requestId, path: ctx.path });
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
      log.error('http.unhandled_error', { requestId, path: ctx.path, error });
      ctx.status = 500;
      ctx.body = { error: 'internal error' };
    }
  };
}
