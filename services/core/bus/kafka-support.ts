import kafkajs, { type IHeaders, type logCreator } from 'kafkajs';
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
 * 10 tries (about 35 s at the consumers' client's intervals, kafka-bus.ts) instead of the 5.
 */
export const CONSUMER_RECOVERY = { metadataMaxAge: 3000, retry: { retries: 10 } } as const;

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
