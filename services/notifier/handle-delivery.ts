import {
  topics,
  type BusRecord,
  type DeliveryContext,
  type EventBus,
  type RecordHandler,
} from '../core/bus/event-bus.ts';
import { HandBack } from '../core/bus/hand-back.ts';
import { deliveryRecordId, parseDeliveryRecordId } from '../core/callbacks/callback-request.ts';
import type { CallbackDelivery, CallbackStatus } from '../core/contracts/types.generated.ts';
import type { EventCodec } from '../core/events/event-codec.ts';
import { deadLetter } from '../core/worker/dead-letter.ts';
import { untilAcknowledged, type UntilAcknowledged } from '../core/worker/until-acknowledged.ts';
import type { HttpClient } from '../core/net/guarded-http.ts';
import type { Logger } from '../core/observability/logger.ts';
import type { Metrics } from '../core/observability/metrics.ts';
import {
  extractTraceContext,
  markFailed,
  SpanKind,
  startChildSpan,
  traceHeaders,
  tracingOff,
  withTraceHeaders,
  type Tracing,
} from '../core/observability/tracing.ts';
import type { Clock } from '../core/time.ts';
import { attemptResult, deliverCallback, type AttemptOutcome } from './deliver-callback.ts';
import type { HostSlots } from './host-slots.ts';
import { planRetry, type RetryPolicy } from './retry-schedule.ts';

const NEVER = new AbortController().signal;

export interface DeliveryDeps {
  bus: EventBus;
  codec: EventCodec;
  http: HttpClient;
  log: Logger;
  metrics: Metrics;
  /** Default: off (the job's trace context is still sent on the callback request). */
  tracing?: Tracing;
  clock: Clock;
}

export interface DeliveryOptions {
  policy: RetryPolicy;
  /** Time-out of one attempt, in ms. */
  timeoutMs: number;
  /**
   * Aborted when the notifier's stop runs out of grace: cuts an attempt under way short, and the
   * tries of a delivered attempt's status. A record lost otherwise (a rebalance, a consumer
   * restarting in a broker's failover) does neither. Default: never.
   */
  stopped?: AbortSignal;
  hostSlots: HostSlots;
  /** The `whsec_` secret that signs an organisation's callbacks; undefined: unsigned. */
  secretFor(orgId: string): string | undefined;
  /** How long a record whose host is at its bound waits before it is tried again, in ms (default 1000). */
  deferMs?: number;
  /** Source of the backoff jitter, in [0, 1) (default Math.random). */
  random?: () => number;
  /** When the job's organisation last canceled it (job-cancels.ts); undefined: never. */
  canceledAt?: (jobId: string, orgId: string) => string | undefined;
  /**
   * The delivery records already settled, by record id (job-outcomes.ts: noted by this process,
   * and read from the callback-status events of every notifier, at start and while running): a
   * record that comes again (a publish tried again that was written twice, a record read again
   * after its commit was lost, a restart or a rebalance, the same terminal event scheduled twice)
   * is skipped. A record is noted once its attempt is settled. Default: none remembered.
   */
  handled?: {
    has(jobId: string, deliveryId: string): boolean;
    add(jobId: string, deliveryId: string): void;
  };
}

/**
 * Handles one record of the callbacks topic: exactly one attempt, then the outcome on the bus
 * (status event; the next attempt as a record with a due time; or a dead letter). It never waits
 * for a due time or a busy host: both are republished, and the record is committed.
 */
export function createDeliveryHandler(deps: DeliveryDeps, options: DeliveryOptions): RecordHandler {
  // Two copies of one record in flight at once (a partition's window, a record read again after
  // a rebalance or a consumer's restart) make one attempt: the second waits for the first.
  const inFlight = new Map<string, Promise<void>>();
  // Delivered here, the `delivered` status not yet acknowledged (its tries ended by a stop past
  // its grace, or by an error other than the bus's): a copy of the record read here publishes
  // the status instead of calling back a second time.
  const unacknowledged = new Map<string, () => Promise<void>>();
  return async (record, delivery) => {
    const decoded = deps.codec.decode(record);
    if (!decoded.ok) return deadLetter(deps, record, 'invalid_event', decoded.reason);
    if (decoded.event.type !== 'media.callback.delivery')
      return deadLetter(
        deps,
        record,
        'unexpected_event',
        `${decoded.event.type} on the callbacks topic`,
      );
    const job = decoded.event.data;
    const deliveryId = decoded.event.id;
    // Awaited only while there is one: the check and the claim below are one synchronous step.
    let earlierSettled = false;
    for (let earlier = inFlight.get(deliveryId); earlier; earlier = inFlight.get(deliveryId)) {
      const settled = await earlier.then(
        () => true,
        () => false,
      );
      earlierSettled ||= settled;
    }
    const status = unacknowledged.get(deliveryId);
    if (earlierSettled || status || options.handled?.has(job.jobId, deliveryId)) {
      deps.log.info('callback.duplicate_attempt', { jobId: job.jobId, attempt: job.attempt });
      if (status) await untilAcknowledged(deps.log, delivery.signal, options.random)(status);
      unacknowledged.delete(deliveryId);
      return;
    }
    if (stoppedByCancel(job, options)) {
      await stop(deps, record, job, deliveryId);
      return options.handled?.add(job.jobId, deliveryId);
    }
    const release = options.hostSlots.tryAcquire(new URL(job.url).host);
    if (!release) return defer(deps, options, record);
    const attempt = attemptOnce(
      deps,
      { ...options, unacknowledged },
      { record, job, deliveryId },
      delivery,
      release,
    );
    inFlight.set(deliveryId, attempt);
    try {
      await attempt;
    } finally {
      inFlight.delete(deliveryId);
    }
    options.handled?.add(job.jobId, deliveryId);
  };
}

/** One attempt of a delivery record, and its outcome settled on the bus. */
async function attemptOnce(
  deps: DeliveryDeps,
  options: DeliveryOptions & { unacknowledged: Map<string, () => Promise<void>> },
  { record, job, deliveryId }: { record: BusRecord; job: CallbackDelivery; deliveryId: string },
  delivery: DeliveryContext,
  release: () => void,
): Promise<void> {
  const startedAt = deps.clock.now();
  const started = performance.now();
  const { span, context } = startChildSpan(
    (deps.tracing ?? tracingOff).tracer,
    'callback delivery',
    extractTraceContext(record.headers),
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        'server.address': new URL(job.url).hostname,
        'media.job.id': job.jobId,
        'media.callback.attempt': job.attempt,
      },
    },
  );
  let outcome: AttemptOutcome;
  try {
    await delivery.heartbeat();
    // Not cut short when the record is lost (a consumer's crash in a broker's failover, a
    // rebalance): a request the receiver may already have taken would be made again by the
    // record's next reading. It ends within the time-out, or when a stop's grace runs out; its
    // outcome is then settled, and the record read again finds it (createDeliveryHandler).
    outcome = await deliverCallback(deps.http, job, {
      timeoutMs: options.timeoutMs,
      secret: options.secretFor(job.orgId),
      ...(options.stopped ? { signal: options.stopped } : {}),
      now: () => deps.clock.now(),
      headers: traceHeaders(context),
    });
  } catch (error) {
    markFailed(span, error);
    span.end();
    throw error;
  } finally {
    release();
  }
  if (outcome.status !== undefined) span.setAttribute('http.response.status_code', outcome.status);
  if (outcome.kind !== 'delivered') markFailed(span, { code: outcome.kind });
  span.end();
  // Failed after the record was lost: not counted; the record is read again with the same number.
  if (delivery.signal.aborted && outcome.kind !== 'delivered')
    throw new HandBack('notifier stopping');
  deps.metrics.callbackAttempts.inc({ result: attemptResult(outcome) });
  deps.metrics.callbackDuration.observe(
    { outcome: outcome.kind === 'delivered' ? 'ok' : 'error' },
    (performance.now() - started) / 1000,
  );
  const firstAttemptAt = job.firstAttemptAt ?? startedAt.toISOString();
  // The attempt was made: its outcome is published until acknowledged, since a hand-back
  // (a failover that outlasts one publish) would make the attempt, and call back, again.
  const persist = untilAcknowledged(deps.log, delivery.signal, options.random);
  const settled = { record, deliveryId, job: { ...job, firstAttemptAt } };
  await settle(deps, options, settled, outcome, persist);
}

/**
 * A cancel asked for after the job ended is its organisation saying to stop calling back (a
 * receiver that does not exist would otherwise be tried for the whole retry horizon). A cancel
 * from before the end is the one that ended the job: its callback says so, and is delivered.
 */
function stoppedByCancel(job: CallbackDelivery, options: DeliveryOptions): boolean {
  const canceledAt = options.canceledAt?.(job.jobId, job.orgId);
  if (canceledAt === undefined) return false;
  const finishedAt = (job.body as Record<string, unknown>)['finishedAt'];
  const endedAt = typeof finishedAt === 'string' ? finishedAt : job.firstAttemptAt;
  return endedAt !== undefined && Date.parse(canceledAt) >= Date.parse(endedAt);
}

async function stop(
  deps: DeliveryDeps,
  record: BusRecord,
  job: CallbackDelivery,
  deliveryId: string,
): Promise<void> {
  await deps.bus.publish([
    withTraceHeaders(
      deps.codec.encode(topics.jobEvents, 'media.callback.status', {
        jobId: job.jobId,
        orgId: job.orgId,
        webhookId: job.webhookId,
        state: 'given_up',
        attempts: job.attempt - 1,
        lastError: 'stopped: the job was canceled after it ended',
        deliveryId,
        at: deps.clock.now().toISOString(),
      }),
      extractTraceContext(record.headers),
    ),
  ]);
  deps.metrics.callbacks.inc({ outcome: 'stopped' });
  deps.log.info('callback.stopped', { jobId: job.jobId, webhookId: job.webhookId });
}

async function defer(
  deps: DeliveryDeps,
  options: DeliveryOptions,
  record: BusRecord,
): Promise<void> {
  const base = options.deferMs ?? 1000;
  // Jittered so that records deferred together do not all come back at the same moment.
  const notBefore =
    deps.clock.now().getTime() + base / 2 + Math.floor((options.random ?? Math.random)() * base);
  await deps.bus.publish([
    {
      topic: topics.callbacks,
      key: record.key,
      value: record.value,
      headers: { ...record.headers },
      notBefore,
    },
  ]);
  deps.metrics.callbacks.inc({ outcome: 'deferred' });
}

/** An attempt made: its record, the record's id and the job with its first attempt's time. */
interface Settled {
  record: BusRecord;
  deliveryId: string;
  job: CallbackDelivery & { firstAttemptAt: string };
}

async function settle(
  deps: DeliveryDeps,
  options: DeliveryOptions & { unacknowledged: Map<string, () => Promise<void>> },
  { record, deliveryId, job }: Settled,
  outcome: AttemptOutcome,
  persist: UntilAcknowledged,
): Promise<void> {
  const log = deps.log.child({
    jobId: job.jobId,
    webhookId: job.webhookId,
    host: new URL(job.url).host,
    attempts: job.attempt,
  });
  const now = deps.clock.now();
  // Every attempt of one callback is a child of the job's trace, not of the attempt before.
  const trace = extractTraceContext(record.headers);
  const status = statusEvents(deps, { job, deliveryId }, outcome, trace, now);

  if (outcome.kind === 'delivered') {
    // Settled the moment the receiver took it: whatever becomes of the status's publish, a copy
    // of this record is never another attempt (see createDeliveryHandler). The status is
    // published until acknowledged even after the record is lost (a consumer's restart, a
    // rebalance): the notifier that reads the record next learns from it that the callback went
    // out (job-outcomes.ts); only a stop past its grace ends the tries, and a copy read here
    // after that publishes it.
    deps.metrics.callbacks.inc({ outcome: 'delivered' });
    log.info('callback.delivered', { status: outcome.status });
    options.handled?.add(job.jobId, deliveryId);
    const delivered = status('delivered');
    const publish = () => deps.bus.publish([delivered]);
    options.unacknowledged.set(deliveryId, publish);
    await untilAcknowledged(deps.log, options.stopped ?? NEVER, options.random)(publish);
    options.unacknowledged.delete(deliveryId);
    return;
  }
  const plan = nextAttempt(options, job, outcome, now);
  if (plan.retry) {
    // A stable id in the record's chain: the next record published twice is one attempt.
    const nextId = deliveryRecordId(parseDeliveryRecordId(deliveryId).chain, job.attempt + 1);
    const next = withTraceHeaders(
      deps.codec.encode(
        topics.callbacks,
        'media.callback.delivery',
        { ...job, attempt: job.attempt + 1 },
        nextId,
      ),
      trace,
    );
    await persist(() =>
      deps.bus.publish([
        { ...next, notBefore: plan.dueAt.getTime() },
        status('retrying', { nextAttemptAt: plan.dueAt.toISOString() }),
      ]),
    );
    deps.metrics.callbacks.inc({ outcome: 'retried' });
    log.info('callback.retry_scheduled', {
      error: outcome.error,
      nextAttemptAt: plan.dueAt.toISOString(),
    });
    return;
  }
  await persist(() => deps.bus.publish([status('given_up')]));
  const reason = outcome.kind === 'permanent' ? 'callback_rejected' : 'callback_exhausted';
  await deadLetter(
    deps,
    record,
    reason,
    `${outcome.error}; ${plan.reason} after ${job.attempt} attempt(s)`,
  );
  deps.metrics.callbacks.inc({ outcome: 'given_up' });
  log.warn('callback.given_up', { error: outcome.error, reason: plan.reason });
}

/** The callback-status events of this attempt's outcome, in the job's trace. */
function statusEvents(
  deps: DeliveryDeps,
  { job, deliveryId }: { job: CallbackDelivery; deliveryId: string },
  outcome: AttemptOutcome,
  trace: ReturnType<typeof extractTraceContext>,
  now: Date,
) {
  const last = {
    ...(outcome.status === undefined ? {} : { lastStatus: outcome.status }),
    ...(outcome.kind === 'delivered' ? {} : { lastError: outcome.error }),
  };
  return (state: CallbackStatus['state'], extra: Partial<CallbackStatus> = {}) =>
    withTraceHeaders(
      deps.codec.encode(topics.jobEvents, 'media.callback.status', {
        jobId: job.jobId,
        orgId: job.orgId,
        webhookId: job.webhookId,
        state,
        attempts: job.attempt,
        ...last,
        ...extra,
        deliveryId,
        at: now.toISOString(),
      }),
      trace,
    );
}

/** Whether a failed attempt is tried again, and when: never after a permanent refusal. */
function nextAttempt(
  options: DeliveryOptions,
  job: CallbackDelivery & { firstAttemptAt: string },
  outcome: Exclude<AttemptOutcome, { kind: 'delivered' }>,
  now: Date,
) {
  if (outcome.kind === 'permanent') return { retry: false, reason: 'not retried' } as const;
  return planRetry(
    options.policy,
    {
      attempt: job.attempt,
      firstAttemptAt: new Date(job.firstAttemptAt),
      retryAfterMs: outcome.retryAfterMs,
    },
    now,
    options.random,
  );
}
