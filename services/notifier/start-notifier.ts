import { topics, type EventBus, type Subscription } from '../core/bus/event-bus.ts';
import type { EventCodec, JobEvent } from '../core/events/event-codec.ts';
import { deadLetter } from '../core/jobs/dead-letter.ts';
import type { HttpClient } from '../core/net/guarded-http.ts';
import type { Logger } from '../core/observability/logger.ts';
import type { Metrics } from '../core/observability/metrics.ts';
import type { Runtime } from '../core/runtime/create-runtime.ts';
import { deliverCallback, type CallbackRequest, type DeliveryPolicy } from './deliver-callback.ts';

export interface NotifierDeps {
  bus: EventBus;
  codec: EventCodec;
  http: HttpClient;
  log: Logger;
  metrics: Metrics;
}

/** The callback a terminal event asks for, if any. Payloads are documented in the README. */
export function callbackFor(event: JobEvent): CallbackRequest | undefined {
  if (event.type === 'media.job.succeeded') {
    const url = event.data.callbacks?.successUrl;
    if (!url) return undefined;
    const { jobId, kind, attempt, finishedAt, result } = event.data;
    return { url, eventId: event.id, body: { eventId: event.id, jobId, kind, status: 'succeeded', attempt, finishedAt, result } };
  }
  if (event.type === 'media.job.failed') {
    const url = event.data.callbacks?.failureUrl;
    if (!url) return undefined;
    const { jobId, kind, attempt, finishedAt, error } = event.data;
    return { url, eventId: event.id, body: { eventId: event.id, jobId, kind, status: 'failed', attempt, finishedAt, code: error.code, message: error.message } };
  }
  return undefined;
}

/** Turns job outcomes into HTTP callbacks; a callback that cannot be delivered is dead-lettered. */
export function startNotifier(deps: NotifierDeps, options: { group: string; concurrency: number; policy: DeliveryPolicy }): Promise<Subscription> {
  return deps.bus.subscribe({
    group: options.group,
    topics: [topics.jobEvents],
    concurrency: options.concurrency,
    fromBeginning: true,
    handler: async (record, delivery) => {
      const decoded = deps.codec.decode(record);
      if (!decoded.ok) return deadLetter(deps, record, 'invalid_event', decoded.reason);
      const callback = callbackFor(decoded.event);
      if (!callback) return;
      const log = deps.log.child({ jobId: decoded.event.subject, eventId: decoded.event.id });
      const result = await deliverCallback(deps.http, callback, options.policy, {
        signal: delivery.signal,
        beforeRetry: () => delivery.heartbeat(),
        onAttempt: (ok, seconds) => deps.metrics.callbackDuration.observe({ outcome: ok ? 'ok' : 'error' }, seconds),
      });
      if (delivery.signal.aborted && !result.delivered) throw new Error('handed back: notifier stopping');
      if (result.delivered) {
        deps.metrics.callbacks.inc({ outcome: 'delivered' });
        log.info('callback.delivered', { attempts: result.attempts, status: result.status });
        return;
      }
      deps.metrics.callbacks.inc({ outcome: 'dead_lettered' });
      log.warn('callback.dead_lettered', { attempts: result.attempts, reason: result.reason });
      await deadLetter(deps, record, 'callback_exhausted', `${result.reason} after ${result.attempts} attempt(s)`);
    },
  });
}

/** The notifier as configured: one group, a few callbacks in flight per process. */
export function startNotifierService(rt: Runtime): Promise<Subscription> {
  const { config } = rt;
  return startNotifier(rt, {
    group: 'notifier',
    concurrency: 4,
    policy: { maxAttempts: config.callbackMaxAttempts, backoffMs: config.callbackBackoffMs, timeoutMs: config.callbackTimeoutMs, signingSecret: config.callbackSigningSecret },
  });
}
