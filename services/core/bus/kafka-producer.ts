import kafkajs, {
  type Message,
  type ProducerBatch,
  type ProducerConfig,
  type TopicMessages,
} from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import { BusUncertainError, BusUnavailableError } from './event-bus.ts';
import { createGroupCommit } from './group-commit.ts';
import { asBusUnavailable, withDeadline } from './kafka-support.ts';

const { Partitioners } = kafkajs;

/** One idempotent producer at a time; replaced after any failure. */
export interface ProducerSlot {
  /**
   * Resolves once the broker acknowledged every message (acks=all), before `deadline` (epoch ms).
   * Rejects with BusUnavailableError when nothing was sent (no producer connected in time), and
   * with BusUncertainError once the messages were handed to the producer: they may be written.
   */
  send(topicMessages: TopicMessages[], deadline: number): Promise<void>;
  /** A producer is connected and no publish failed since the last that succeeded (or `recovered`). */
  healthy(): boolean;
  /** Topics of the publishes that failed since the last success (empty when none did). */
  failedTopics(): readonly string[];
  /** Tells the slot the brokers take publishes again (a probe succeeded): healthy once connected. */
  recovered(): void;
  /** Connects a producer (a fresh one after a failure) before `deadline`. */
  connect(deadline: number): Promise<void>;
  close(): Promise<void>;
}

/** What the slot uses of a kafkajs producer (and of the client that makes them). */
export interface SlotProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  sendBatch(batch: ProducerBatch): Promise<unknown>;
}

export interface ProducerFactory {
  producer(config: ProducerConfig): SlotProducer;
}

interface Handle {
  producer: SlotProducer;
  connected: Promise<void>;
  isConnected: boolean;
  /** Operations started on this producer and not settled yet (they may outlive a deadline). */
  pending: number;
  discarded: boolean;
  disposed?: Promise<void>;
}

/**
 * Why a failure replaces the producer instead of reusing it: kafkajs rolls an idempotent
 * producer's sequence numbers back when a request fails, although the broker may have written
 * the batch; the next batch would then reuse those numbers and be dropped as a duplicate. A
 * fresh producer gets a fresh producer id. The old one is disconnected once its operations,
 * which kafkajs keeps retrying for a bounded time, have settled.
 */
export function createProducerSlot(
  kafka: ProducerFactory,
  log: Logger,
  publishTimeoutMs: number,
): ProducerSlot {
  const pool = createHandlePool(kafka, log, publishTimeoutMs);
  // A connect that works says nothing about the partitions' leaders: after a failed publish the
  // slot stays unhealthy until a publish, or a probe of the failed topics, succeeds.
  const failed = new Set<string>();

  return {
    send: async (topicMessages, deadline) => {
      try {
        await runOnProducer(pool, 'publish', deadline, (handle, sent) =>
          sendBefore(
            handle,
            sent,
            { acks: -1, timeout: publishTimeoutMs, topicMessages },
            deadline,
          ),
        );
        failed.clear();
      } catch (error) {
        for (const { topic } of topicMessages) failed.add(topic);
        throw error;
      }
    },

    healthy: () => pool.current()?.isConnected === true && failed.size === 0,

    failedTopics: () => [...failed],

    recovered: () => failed.clear(),

    connect: (deadline) => runOnProducer(pool, 'connect', deadline, (handle) => handle.connected),

    close: async () => {
      pool.discardAll();
      await withDeadline(
        pool.disposed(),
        Date.now() + publishTimeoutMs,
        'producer disconnect',
      ).catch((error: unknown) => log.warn('kafka.producer_close_incomplete', { error }));
    },
  };
}

/** The slot's producers: the current one, and those discarded whose operations still run. */
interface HandlePool {
  /** The producer in use, undefined after a failure until the next operation opens one. */
  current(): Handle | undefined;
  /** The producer in use, a fresh one when there is none. */
  take(): Handle;
  /** Runs `op` on `handle`, counted, so that a discarded producer is disconnected only after it. */
  track<T>(handle: Handle, op: () => Promise<T>): Promise<T>;
  /** Takes `handle` out of use; it is disconnected once its operations have settled. */
  discard(handle: Handle): void;
  discardAll(): void;
  /** Settles once every discarded producer whose disconnect began has disconnected. */
  disposed(): Promise<unknown>;
}

function createHandlePool(
  kafka: ProducerFactory,
  log: Logger,
  publishTimeoutMs: number,
): HandlePool {
  const handles = new Set<Handle>();
  let current: Handle | undefined;

  const disposeIfIdle = (handle: Handle): void => {
    if (!handle.discarded || handle.pending > 0 || handle.disposed) return;
    handle.disposed = handle.producer
      .disconnect()
      .catch((error: unknown) => log.debug('kafka.producer_disconnect_failed', { error }))
      .finally(() => handles.delete(handle));
  };

  const pool: HandlePool = {
    current: () => current,
    take: () => (current ??= openHandle(kafka, publishTimeoutMs, pool, handles)),
    track: async (handle, op) => {
      handle.pending += 1;
      try {
        return await op();
      } finally {
        handle.pending -= 1;
        disposeIfIdle(handle);
      }
    },
    discard: (handle) => {
      handle.discarded = true;
      if (current === handle) current = undefined;
      disposeIfIdle(handle);
    },
    discardAll: () => {
      for (const handle of handles) pool.discard(handle);
    },
    disposed: () => Promise.all([...handles].flatMap((h) => (h.disposed ? [h.disposed] : []))),
  };
  return pool;
}

/** A fresh idempotent producer, its connect begun (and tracked) at once. */
function openHandle(
  kafka: ProducerFactory,
  publishTimeoutMs: number,
  pool: HandlePool,
  handles: Set<Handle>,
): Handle {
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
    retry: producerRetry(publishTimeoutMs),
  });
  const handle: Handle = {
    producer,
    connected: Promise.resolve(),
    isConnected: false,
    pending: 0,
    discarded: false,
  };
  handle.connected = pool
    .track(handle, () => producer.connect())
    .then(() => {
      handle.isConnected = true;
    });
  // Failures surface through send/connect; this only keeps an unused attempt from being unhandled.
  handle.connected.catch(() => undefined);
  handles.add(handle);
  return handle;
}

/**
 * Runs `op` on the current producer before `deadline`. On failure the producer is discarded, and
 * the error is BusUnavailableError if `op` had not called `sent` yet, else BusUncertainError.
 */
async function runOnProducer(
  pool: HandlePool,
  what: string,
  deadline: number,
  op: (handle: Handle, sent: () => void) => Promise<void>,
): Promise<void> {
  const handle = pool.take();
  let handedOver = false;
  try {
    await withDeadline(
      pool.track(handle, () => op(handle, () => (handedOver = true))),
      deadline,
      what,
    );
  } catch (error) {
    pool.discard(handle);
    const failure = asBusUnavailable(error, what);
    if (!handedOver) throw failure;
    throw new BusUncertainError(`${failure.message}; the records may be written`, {
      cause: error,
    });
  }
}

/** Sends `batch` once `handle` is connected, unless the deadline passed by then. */
async function sendBefore(
  handle: Handle,
  sent: () => void,
  batch: ProducerBatch,
  deadline: number,
): Promise<void> {
  await handle.connected;
  // The connect may outlast the deadline (withDeadline does not stop it): a caller told
  // "nothing was queued" by then must stay right, so nothing is sent after it.
  if (handle.discarded || Date.now() >= deadline)
    throw new BusUnavailableError('publish: connected too late');
  sent();
  await handle.producer.sendBatch(batch);
}

/**
 * Retries that roughly fill the publish deadline (100 ms doubling to 1 s between attempts), so a
 * send the caller has given up on stops shortly after, instead of kafkajs's idempotent default
 * of retrying forever.
 */
function producerRetry(publishTimeoutMs: number): {
  initialRetryTime: number;
  maxRetryTime: number;
  retries: number;
} {
  return {
    initialRetryTime: 100,
    maxRetryTime: 1000,
    retries: 4 + Math.max(1, Math.ceil((publishTimeoutMs - 1500) / 1000)),
  };
}

/** One message for one (prefixed) topic, with the epoch ms by which its caller needs an answer. */
export interface PendingMessage {
  topic: string;
  message: Message;
  deadline: number;
}

export interface BatchingOptions {
  /**
   * How long the first message of a batch waits for others, ms (default 0: until the end of the
   * event-loop turn; while a request is out the next batch fills anyway, so a linger only adds
   * its own time to every answer: 5 ms left the ingress idle half the time under load).
   */
  lingerMs?: number;
  /** A batch goes at once past this many bytes of keys and values (default 512 KiB, under the broker's 1 MiB). */
  maxBytes?: number;
}

export interface BatchingSender {
  /** Resolves once the brokers acknowledged the produce request holding `messages` (acks=all). */
  send(messages: readonly PendingMessage[]): Promise<void>;
  /** Sends what waits now; resolves once every request taken so far has settled. */
  drain(): Promise<void>;
}

/**
 * Concurrent publishes share one produce request: kafkajs has no linger of its own, so the
 * messages sent within `lingerMs`, and those that arrive while the previous request is out
 * (one at a time, as the idempotent producer allows), go in one `sendBatch` with acks=all.
 * A failed request fails every caller waiting on it; each still answers by its own deadline.
 */
export function createBatchingSender(
  slot: ProducerSlot,
  options: BatchingOptions = {},
): BatchingSender {
  const batches = createGroupCommit<PendingMessage>({
    lingerMs: options.lingerMs ?? 0,
    maxBytes: options.maxBytes ?? 512 * 1024,
    sizeOf: (m) => byteLength(m.message.key) + byteLength(m.message.value),
    write: (messages) => {
      const byTopic = new Map<string, Message[]>();
      let deadline = Infinity;
      for (const m of messages) {
        const list = byTopic.get(m.topic) ?? [];
        list.push(m.message);
        byTopic.set(m.topic, list);
        deadline = Math.min(deadline, m.deadline);
      }
      // Waiting behind the previous request used the time up: nothing is sent, so a caller told
      // "not queued" was not queued.
      if (deadline <= Date.now())
        return Promise.reject(new BusUnavailableError('publish: no answer from Kafka in time'));
      const topicMessages = [...byTopic].map(([topic, list]) => ({ topic, messages: list }));
      return slot.send(topicMessages, deadline);
    },
  });
  return {
    // No deadline of its own: batches go one at a time, in order, each bounded by the earliest
    // deadline it holds, so a caller hears back by its deadline and only after the producer
    // that failed it was replaced (isReady then reports the outage at once).
    send: (messages) => batches.add(messages),
    drain: () => batches.drain(),
  };
}

function byteLength(data: Message['key'] | Message['value']): number {
  if (data === null || data === undefined) return 0;
  return typeof data === 'string' ? Buffer.byteLength(data) : data.length;
}
