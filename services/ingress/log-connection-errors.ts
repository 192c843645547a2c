import type { Context } from 'koa';
import type { Logger } from '../core/observability/logger.ts';
import { requestIdOf } from './handle-errors.ts';

/** Connection failures a client causes: resets, early ends, requests the parser cannot read. */
const CLIENT_SIDE_CODES =
  /^(ECONNRESET|EPIPE|ECONNABORTED|ERR_STREAM_PREMATURE_CLOSE|HPE_[A-Z_]+)$/;

/**
 * The listener of a Koa app's `error` event. Koa reports there what happens to a connection
 * after the handlers (a client resetting it, a body cut short); its default prints to stderr,
 * outside the structured log.
 */
export function logConnectionErrors(log: Logger) {
  return (error: unknown, ctx?: Context): void => {
    const requestId = ctx ? requestIdOf(ctx) : undefined;
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && CLIENT_SIDE_CODES.test(code))
      log.info('http.connection_closed_by_client', { requestId, code });
    else log.error('http.connection_error', { requestId, error });
  };
}
