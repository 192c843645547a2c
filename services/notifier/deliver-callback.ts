import { ForbiddenUrlError, type HttpClient } from '../core/net/guarded-http.ts';
import { parseRetryAfter } from './retry-schedule.ts';
import { webhookHeaders } from './sign-webhook.ts';

/** One attempt of one callback. */
export interface CallbackAttempt {
  url: string;
  webhookId: string;
  body: Record<string, unknown>;
  /** Attempt number, from 1. */
  attempt: number;
}

export interface AttemptOptions {
  /** The attempt is abandoned after this long, in ms (connect, answer and headers). */
  timeoutMs: number;
  /** `whsec_…` secret of the job's organisation; undefined: sent unsigned. */
  secret: string | undefined;
  /** Cuts the attempt short (it is then not counted); without one, only the time-out does. */
  signal?: AbortSignal;
  now: () => Date;
  /** Sent besides the webhook headers: the job's trace context (`traceparent`, `tracestate`). */
  headers?: Readonly<Record<string, string>>;
}

/**
 * What one attempt came to. `retryable`: network error, time-out, 408, 429 or 5xx; `permanent`:
 * any other non-2xx (redirects are not followed) or a URL the address policy refuses.
 * `error` is safe to show the caller: a status or a short cause, never a secret or a local path.
 */
export type AttemptOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'retryable'; status?: number; error: string; retryAfterMs?: number }
  | { kind: 'permanent'; status?: number; error: string };

/** The `result` label of media_callback_attempts_total for an attempt's outcome. */
export function attemptResult(
  outcome: AttemptOutcome,
): '2xx' | '4xx' | '5xx' | 'timeout' | 'network_error' | 'refused_address' {
  if (outcome.status !== undefined)
    return outcome.status < 300 ? '2xx' : outcome.status < 500 ? '4xx' : '5xx';
  if (outcome.kind === 'delivered') return '2xx';
  if (outcome.error.startsWith('refused')) return 'refused_address';
  return outcome.error.startsWith('no answer within') ? 'timeout' : 'network_error';
}

/** POSTs the callback once. No retry here: retrying is scheduled on the bus. */
export async function deliverCallback(
  http: HttpClient,
  callback: CallbackAttempt,
  options: AttemptOptions,
): Promise<AttemptOutcome> {
  const body = JSON.stringify(callback.body);
  const headers = webhookHeaders({
    webhookId: callback.webhookId,
    attempt: callback.attempt,
    body,
    secret: options.secret,
    now: options.now(),
  });
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  try {
    const res = await http.request(callback.url, {
      method: 'POST',
      headers: { ...options.headers, ...headers },
      body: Buffer.from(body),
      signal,
      idleTimeoutMs: options.timeoutMs,
    });
    // The receiver's body is never read: a slow one must not hold the slot.
    res.destroy();
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) return { kind: 'delivered', status };
    const error = `answered ${status}`;
    if (status === 408 || status === 429 || status >= 500) {
      const retryAfterMs = parseRetryAfter(res.headers['retry-after'], options.now());
      return retryAfterMs === undefined
        ? { kind: 'retryable', status, error }
        : { kind: 'retryable', status, error, retryAfterMs };
    }
    return { kind: 'permanent', status, error };
  } catch (error) {
    if (error instanceof ForbiddenUrlError)
      return {
        kind: 'permanent',
        error: 'refused: the URL points at a loopback, private or link-local address',
      };
    return { kind: 'retryable', error: describeNetworkError(error, signal, options.timeoutMs) };
  }
}

// Only the cause: a raw message may hold addresses or paths of this machine.
function describeNetworkError(error: unknown, signal: AbortSignal, timeoutMs: number): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection reset';
  if (signal.aborted || /in time/.test((error as Error).message))
    return `no answer within ${timeoutMs} ms`;
  if (typeof code === 'string' && /^(CERT_|ERR_TLS|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(code))
    return 'TLS certificate not accepted';
  return 'network error';
}
