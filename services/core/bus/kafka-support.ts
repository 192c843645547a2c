import kafkajs, { type Consumer, type IHeaders, type logCreator } from 'kafkajs';
import { BusUnavailableError } from './event-bus.ts';
import type { Logger } from '../observability/logger.ts';

const { logLevel } = kafkajs;

// kafkajs warns about these on purpose-made choices of ours; they are not operator news.
const EXPECTED_WARNINGS = [
  // Publish has a deadline (publishTimeoutMs), so the idempotent producer's retries are bounded
  // on purpose; a publish that gives up is reported to the caller, who publishes again.
  'Limiting retries for the idempotent producer',
];

/** Passes kafkajs's own logs (warn and error only) through the service logger. */
export function kafkaLogCreator(log: Logger): logCreator {
  return () =>
    ({ namespace, level, log: entry }) => {
      const { message, timestamp: _timestamp, logger: _logger, stack: _stack, ...rest } = entry;
      const fields = {
        kafkaNamespace: namespace,
        kafkaMessage: message,
        ...(rest as Record<string, unknown>),
      };
      if (EXPECTED_WARNINGS.some((w) => message.startsWith(w)))
        log.debug('kafka.client_log', fields);
      else if (level === logLevel.ERROR && !isRequestError(namespace, message))
        log.error('kafka.client_log', fields);
      else if (level <= logLevel.WARN) log.warn('kafka.client_log', fields);
      else log.debug('kafka.client_log', fields);
    };
}

// kafkajs logs every error answer to a request at error level, although most are retried or
// handled (not the leader yet, rebalance in progress, coordinator loading). An outcome that
// matters reaches the bus's own logs (publish failed, commit failed, consumer crashed), so
// these stay warnings.
function isRequestError(namespace: string, message: string): boolean {
  return namespace === 'Connection' && message.startsWith('Response ');
}

export const kafkaLogLevel = logLevel.WARN;

/**
 * How every long-lived consumer rides out a broker's death (spread into `kafka.consumer`).
 * A fetch from a partition's dead leader fails with a refused connection, and kafkajs only
 * re-reads the cluster's metadata (where the new leader is named) once it is `metadataMaxAge`
 * old (default 5 min): meanwhile each fetch goes to the dead broker again, and after its
 * `retry.retries` (default 5, about 10 s) the consumer crashes, leaves its group and aborts the
 * records it runs. With the metadata at most 3 s old, the fetchers move to the new leaders
 * once the controller has elected them (about 9 s after the death at Kafka's defaults), within
 * 10 tries (about 35 s at the consumers' client's intervals, kafka-bus.ts). kafkajs counts the
 * fetch loop's failures over the consumer's whole run, never resetting the count after a
 * fetch that succeeds: two outages minutes apart spent 10 tries between them on CI. So a
 * consumer has 30, about 2 min 15 s of failing in a row for one operation (a join, a commit);
 * one that stops working without a crash is replaced by its stall watch (startStallWatch).
 */
export const CONSUMER_RECOVERY = { metadataMaxAge: 3000, retry: { retries: 30 } } as const;

/**
 * The longest a long-lived consumer may go without a fetch, a heartbeat or a join before it is
 * replaced (`settings.stallMs`, else the larger of 60 s and a rebalance timeout plus two session
 * timeouts: 90 s at the defaults). A working consumer shows one of them at least every
 * `maxWaitTimeMs`: kafkajs fetches from every broker in a loop, paused or not and with or
 * without partitions, and a join waits at most the rebalance timeout for the other members.
 */
export function consumerStallMs(settings: {
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  stallMs?: number | undefined;
}): number {
  return (
    settings.stallMs ??
    Math.max(60_000, settings.rebalanceTimeoutMs + 2 * settings.sessionTimeoutMs)
  );
}

/** Replaces a long-lived consumer (createReplacer). */
export interface ConsumerReplacer {
  /** Starts a replacement unless one is under way or the owner is stopping. */
  replace(reason: string): void;
  /** The replacement under way, if any: it ends once it has started a consumer or sees `stopping`. */
  readonly pending: Promise<void> | undefined;
}

/**
 * Replacement of the long-lived consumer of a subscription, tail or forwarder: logs
 * `kafka.consumer_replaced`, calls `onReplace` (what the old one held is forgotten), disconnects
 * the old consumer within the bus's bound, then makes and starts new ones (`startNext`, which
 * makes one its owner's current consumer) until one starts, `retryMs` apart while the brokers
 * do not answer, or the owner stops (a consumer started as it stopped is disconnected here).
 */
export function createReplacer(o: {
  log: Logger;
  disconnect: Disconnect;
  retryMs: number;
  stopping(): boolean;
  current(): Consumer;
  onReplace?(): void;
  startNext(): Promise<void>;
}): ConsumerReplacer {
  let pending: Promise<void> | undefined;
  const run = async (): Promise<void> => {
    await o.disconnect(o.current(), 'consumer disconnect');
    while (!o.stopping()) {
      try {
        await o.startNext();
        if (o.stopping()) await o.disconnect(o.current(), 'consumer disconnect');
        return;
      } catch (error) {
        o.log.warn('kafka.consumer_start_failed', { error });
        await o
          .current()
          .disconnect()
          .catch(() => undefined);
        await new Promise((resolve) => {
          setTimeout(resolve, o.retryMs).unref();
        });
      }
    }
  };
  return {
    replace(reason) {
      if (pending || o.stopping()) return;
      o.log.warn('kafka.consumer_replaced', { reason });
      o.onReplace?.();
      pending = run().finally(() => {
        pending = undefined;
      });
    },
    get pending() {
      return pending;
    },
  };
}

/** A watch over one long-lived consumer at a time. */
export interface StallWatch {
  /** Starts watching `consumer` (a replacement), forgetting the one watched before. */
  watch(consumer: Consumer): void;
  stop(): void;
}

/**
 * Calls `onStall` once the consumer it watches has gone `stallMs` without a fetch, a heartbeat or
 * a join, or `stallMs` after a rebalance began without joining again. kafkajs gives no such signal itself: a consumer whose join stalls (a coordinator that
 * answered "loading" after a broker's restart, kafkajs 2.2.4) or whose fetch loop ended without
 * a crash stays connected and silent, and its records wait for a restart of the process.
 */
export function startStallWatch(stallMs: number, onStall: (reason: string) => void): StallWatch {
  let watched: Consumer | undefined;
  let aliveAt = Date.now();
  /** Since when the consumer's group has been rebalancing without a join, if it is. */
  let rejoiningSince: number | undefined;
  const alive = (consumer: Consumer) => (): void => {
    if (consumer === watched) aliveAt = Date.now();
  };
  const timer = setInterval(
    () => {
      if (!watched) return;
      const now = Date.now();
      if (rejoiningSince !== undefined && now - rejoiningSince > stallMs) {
        rejoiningSince = undefined;
        onStall(`no join for ${stallMs} ms after a rebalance began`);
      } else if (now - aliveAt > stallMs) {
        aliveAt = now;
        onStall(`no fetch, heartbeat or join for ${stallMs} ms`);
      }
    },
    Math.max(500, Math.floor(stallMs / 4)),
  );
  timer.unref();
  return {
    watch(consumer) {
      watched = consumer;
      aliveAt = Date.now();
      rejoiningSince = undefined;
      // A join that never ends (after a coordinator answered "loading", CI 2026-12-07) left the
      // consumer emitting something the silence test counts as alive for minutes: a rebalance
      // has its own bound, as a join waits at most the rebalance timeout for the members.
      consumer.on(consumer.events.REBALANCING, () => {
        if (consumer === watched) rejoiningSince ??= Date.now();
      });
      consumer.on(consumer.events.GROUP_JOIN, () => {
        if (consumer === watched) rejoiningSince = undefined;
      });
      for (const event of [
        consumer.events.GROUP_JOIN,
        consumer.events.FETCH_START,
        consumer.events.HEARTBEAT,
      ])
        consumer.on(event, alive(consumer));
    },
    stop: () => clearInterval(timer),
  };
}

/** Rejects with BusUnavailableError once `deadline` (epoch ms) passes; `work` goes on regardless. */
export function withDeadline<T>(work: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new BusUnavailableError(`${what}: no answer from Kafka in time`)),
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** Disconnects a kafkajs client at close, within a bound; never rejects. */
export type Disconnect = (client: { disconnect(): Promise<void> }, what: string) => Promise<void>;

/**
 * The disconnects of one bus's consumers at close, each within `timeoutMs`. kafkajs's disconnect
 * first waits for the consumer's fetch in flight, which with the brokers gone is spending its
 * connection retries (about 9 s): once one disconnect went unanswered, the next ones get
 * `afterUnansweredMs`, so a stopping process waits for brokers that are gone once, not once per
 * consumer (a worker closes three in turn: its jobs, its cancels, the delay forwarder).
 */
export function createDisconnect(
  log: Logger,
  timeoutMs: number,
  afterUnansweredMs = 500,
): Disconnect {
  let unanswered = false;
  return async (client, what) => {
    const bound = unanswered ? Math.min(afterUnansweredMs, timeoutMs) : timeoutMs;
    try {
      await withDeadline(client.disconnect(), Date.now() + bound, what);
    } catch (error) {
      // withDeadline's own rejection (kafkajs's are its errors, not BusUnavailableError).
      if (error instanceof BusUnavailableError) unanswered = true;
      log.warn('kafka.consumer_disconnect_failed', { what, error });
    }
  };
}

/** The Kafka protocol error type (`REBALANCE_IN_PROGRESS`, ...) of an error or of its causes. */
export function kafkaErrorType(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 5; depth += 1) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string') return type;
    e = (e as { cause?: unknown }).cause ?? (e as { originalError?: unknown }).originalError;
  }
  return undefined;
}

export function asBusUnavailable(error: unknown, what: string): BusUnavailableError {
  if (error instanceof BusUnavailableError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new BusUnavailableError(`${what}: ${reason}`, { cause: error });
}

/** Kafka header values arrive as bytes (an array when a name repeats: the last one wins). */
export function headersToStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    if (last !== undefined) out[name] = Buffer.isBuffer(last) ? last.toString('utf8') : last;
  }
  return out;
}

/**
 * A topic just created may not have its leader known to every broker yet (NOT_LEADER…, which
 * kafkajs's admin does not retry for every request): a few tries over about 5 s.
 */
export async function retried<T>(op: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await op();
    } catch (error) {
      const retriable = (error as { retriable?: unknown } | null)?.retriable === true;
      if (!retriable || attempt >= 8) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 100 * 2 ** attempt)));
    }
  }
}
