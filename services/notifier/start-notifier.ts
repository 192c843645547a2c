import { topics, type Subscription } from '../core/bus/event-bus.ts';
import { ConfigError } from '../core/config.ts';
import { callbackFor, firstDeliveryRecord } from '../core/callbacks/callback-request.ts';
import { deadLetter } from '../core/worker/dead-letter.ts';
import { startJobCancels } from '../core/status/job-cancels.ts';
import { startJobOutcomes, type JobOutcomes } from '../core/status/job-outcomes.ts';
import { untilAcknowledged } from '../core/worker/until-acknowledged.ts';
import type { Logger } from '../core/observability/logger.ts';
import { extractTraceContext, withTraceHeaders } from '../core/observability/tracing.ts';
import type { BusRecord, DeliveryContext } from '../core/bus/event-bus.ts';
import type { Runtime } from '../core/runtime/create-runtime.ts';
import {
  createDeliveryHandler,
  type DeliveryDeps,
  type DeliveryOptions,
} from './handle-delivery.ts';
import { createHostSlots } from './host-slots.ts';
import type { RetryPolicy } from './retry-schedule.ts';

export type NotifierDeps = DeliveryDeps;

export interface NotifierOptions extends Omit<DeliveryOptions, 'hostSlots'> {
  /** Consumer group reading job events; the attempts are read by `<group>-callbacks`. */
  group: string;
  /** Callback attempts this process makes at once. */
  concurrency: number;
  /** Attempts this process makes at once to one host. */
  maxInFlightPerHost: number;
  policy: RetryPolicy;
}

/**
 * Turns job outcomes into callbacks in two steps, each its own consumer: a terminal event with a
 * callback URL becomes a delivery record (committed at once), and each delivery record is one
 * attempt. Retries wait on the bus, so no handler slot is held between attempts.
 */
export async function startNotifier(
  deps: NotifierDeps,
  options: NotifierOptions,
): Promise<Subscription> {
  // Read before the first event: a terminal event or a delivery record read again (a worker's
  // outcome published twice, a redelivery, a publish tried again) must not make a second
  // callback, in this process or another, or after a restart (the callback statuses).
  const outcomes = await startJobOutcomes(deps, { callbacks: true });
  const scheduler = await deps.bus.subscribe({
    group: options.group,
    topics: [topics.jobEvents],
    concurrency: 4,
    fromBeginning: true,
    handler: (record, delivery) => scheduleCallback(deps, outcomes, record, delivery),
  });
  // A cancel of an ended job stops its callback's retries (handle-delivery.ts).
  const cancels = await startJobCancels(deps);
  const stopping = new AbortController();
  const attempts = await deps.bus.subscribe({
    group: `${options.group}-callbacks`,
    topics: [topics.callbacks],
    concurrency: options.concurrency,
    fromBeginning: true,
    handler: createDeliveryHandler(deps, {
      ...options,
      hostSlots: createHostSlots(options.maxInFlightPerHost),
      stopped: stopping.signal,
      canceledAt: (jobId, orgId) => cancels.canceledAt(jobId, orgId),
      handled: {
        has: (jobId, eventId) => outcomes.deliveryHandled(jobId, eventId),
        add: (jobId, eventId) => outcomes.noteDelivery(jobId, eventId),
      },
    }),
  });
  return {
    async close(graceMs) {
      // Attempts under way end on their own within the grace; past it they are cut short.
      const graceOver = setTimeout(() => stopping.abort(), graceMs ?? 0);
      await Promise.all([scheduler.close(graceMs), attempts.close(graceMs)]).finally(() =>
        clearTimeout(graceOver),
      );
      stopping.abort();
      await Promise.all([cancels.close(), outcomes.close()]);
    },
  };
}

/**
 * A terminal event with a callback URL becomes one delivery record, once per event id (the
 * callback's webhook-id): the record is published until acknowledged rather than handed back,
 * since a hand-back after a publish that was written all the same would queue a second one.
 */
async function scheduleCallback(
  deps: NotifierDeps,
  outcomes: JobOutcomes,
  record: BusRecord,
  delivery: DeliveryContext,
): Promise<void> {
  const decoded = deps.codec.decode(record);
  if (!decoded.ok) return deadLetter(deps, record, 'invalid_event', decoded.reason);
  const callback = callbackFor(decoded.event);
  if (!callback) return;
  const { jobId } = decoded.event.data;
  if (!outcomes.claimCallback(jobId, callback.webhookId)) {
    deps.log.info('callback.duplicate_event', { jobId, webhookId: callback.webhookId });
    return;
  }
  // The delivery record carries the job's trace on to the attempt and its HTTP request.
  const first = withTraceHeaders(
    firstDeliveryRecord(deps.codec, callback, decoded.event.data, callback.webhookId),
    extractTraceContext(record.headers),
  );
  try {
    await untilAcknowledged(deps.log, delivery.signal)(() => deps.bus.publish([first]));
  } catch (error) {
    outcomes.releaseCallback(jobId, callback.webhookId);
    throw error;
  }
}

/**
 * Which secret signs an organisation's callbacks. With WEBHOOK_SECRETS: its entry, or none
 * (unsigned, warned once per organisation). Without: the fallback (all-in-one's first-run
 * secret) for every organisation; with no fallback either, the notifier refuses to start unless
 * unsigned callbacks are allowed (then warned once), so a missing secret is never silent.
 */
export function webhookSecretResolver(
  secrets: ReadonlyMap<string, string>,
  fallback: string | undefined,
  log: Logger,
  options: { allowUnsigned?: boolean } = {},
): (orgId: string) => string | undefined {
  const warned = new Set<string>();
  if (secrets.size === 0) {
    if (!fallback && !options.allowUnsigned)
      throw new ConfigError(
        'WEBHOOK_SECRETS is required: callbacks would be sent without webhook-signature (set WEBHOOK_SECRETS="org1:whsec_…", or ALLOW_UNSIGNED_CALLBACKS=true to send them unsigned)',
      );
    if (!fallback)
      log.warn('callback.unsigned', {
        note: 'WEBHOOK_SECRETS is unset and ALLOW_UNSIGNED_CALLBACKS=true: callbacks are sent without webhook-signature',
      });
    return () => fallback;
  }
  return (orgId) => {
    const secret = secrets.get(orgId);
    if (!secret && !warned.has(orgId)) {
      warned.add(orgId);
      log.warn('callback.unsigned', {
        orgId,
        note: 'WEBHOOK_SECRETS has no entry for this organisation: its callbacks are sent without webhook-signature',
      });
    }
    return secret;
  };
}

/** The notifier as configured. `fallbackSecret`: the all-in-one launcher's first-run secret. */
export function startNotifierService(
  rt: Runtime,
  options: { fallbackSecret?: string } = {},
): Promise<Subscription> {
  const { config } = rt;
  return startNotifier(rt, {
    group: 'notifier',
    concurrency: config.callbackConcurrency,
    maxInFlightPerHost: config.callbackMaxInFlightPerHost,
    timeoutMs: config.callbackTimeoutMs,
    policy: {
      backoffMs: config.callbackBackoffMs,
      backoffMaxMs: config.callbackBackoffMaxMs,
      horizonMs: config.callbackRetryHorizonMs,
    },
    secretFor: webhookSecretResolver(config.webhookSecrets, options.fallbackSecret, rt.log, {
      allowUnsigned: config.allowUnsignedCallbacks,
    }),
  });
}
