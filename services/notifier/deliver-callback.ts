import { createHmac } from 'node:crypto';
import { ForbiddenUrlError, type HttpClient } from '../core/net/guarded-http.ts';
import { sleep } from '../core/time.ts';

export interface CallbackRequest {
  url: string;
  /** The event id: receivers dedupe on it (also sent as X-Media-Event-Id). */
  eventId: string;
  body: object;
}

export interface DeliveryPolicy {
  maxAttempts: number;
  /** Backoff before the 2nd attempt, doubled each time. */
  backoffMs: number;
  timeoutMs: number;
  signingSecret: string | undefined;
}

export type DeliveryResult =
  | { delivered: true; attempts: number; status: number }
  | { delivered: false; attempts: number; reason: string };

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`, as receivers verify it (README). */
export function signCallback(secret: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${mac}`;
}

const permanent = (status: number): boolean => status >= 400 && status < 500 && status !== 408 && status !== 429;

/**
 * POSTs the callback until a 2xx, a permanent refusal (4xx other than 408/429), or the last
 * attempt. `beforeRetry` runs between attempts (the notifier heartbeats there).
 */
export async function deliverCallback(
  http: HttpClient,
  request: CallbackRequest,
  policy: DeliveryPolicy,
  options: { signal: AbortSignal; beforeRetry?: () => Promise<void>; onAttempt?: (ok: boolean, seconds: number) => void },
): Promise<DeliveryResult> {
  const body = JSON.stringify(request.body);
  let reason = 'not attempted';
  for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
    if (options.signal.aborted) return { delivered: false, attempts: attempt - 1, reason: 'stopped' };
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'media-service-notifier/1',
      'x-media-event-id': request.eventId,
      'x-media-delivery-attempt': String(attempt),
    };
    if (policy.signingSecret) headers['x-media-signature'] = signCallback(policy.signingSecret, Math.floor(Date.now() / 1000), body);
    const started = performance.now();
    try {
      const timeout = AbortSignal.any([options.signal, AbortSignal.timeout(policy.timeoutMs)]);
      const res = await http.request(request.url, { method: 'POST', headers, body: Buffer.from(body), signal: timeout, idleTimeoutMs: policy.timeoutMs });
      res.resume();
      const status = res.statusCode ?? 0;
      options.onAttempt?.(status >= 200 && status < 300, (performance.now() - started) / 1000);
      if (status >= 200 && status < 300) return { delivered: true, attempts: attempt, status };
      reason = `answered ${status}`;
      if (permanent(status)) return { delivered: false, attempts: attempt, reason };
    } catch (error) {
      options.onAttempt?.(false, (performance.now() - started) / 1000);
      // A refused address will be refused again: no retry.
      if (error instanceof ForbiddenUrlError) return { delivered: false, attempts: attempt, reason: error.message };
      reason = `not reachable: ${(error as Error).message}`;
    }
    if (attempt < policy.maxAttempts) {
      await sleep(policy.backoffMs * 2 ** (attempt - 1), options.signal);
      await options.beforeRetry?.();
    }
  }
  return { delivered: false, attempts: policy.maxAttempts, reason };
}
