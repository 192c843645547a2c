import kafkajs, { type Kafka as KafkaClient, type KafkaConfig } from 'kafkajs';
import {
  BusUnavailableError,
  compactedTopics,
  topics,
  type EventBus,
  type OutgoingRecord,
  type SubscribeOptions,
  type Subscription,
} from './event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import {
  createBatchingSender,
  createProducerSlot,
  type BatchingSender,
  type PendingMessage,
  type ProducerSlot,
} from './kafka-producer.ts';
import { startKafkaSubscription, type ConsumerSettings } from './kafka-subscription.ts';
import {
  asBusUnavailable,
  createDisconnect,
  kafkaLogCreator,
  kafkaLogLevel,
  withDeadline,
} from './kafka-support.ts';
import { ensureKafkaTopics, type TopicReport } from './kafka-topics.ts';
import { createReadyProbe, type ReadyProbe } from './kafka-ready-probe.ts';
import { TopicDurabilityError } from './topic-durability.ts';
import { startKafkaTail } from './kafka-tail.ts';
import { routeRecord, startDelayForwarder, type DelayForwarder } from './kafka-delay.ts';

const { Kafka } = kafkajs;

export type { TopicReport } from './kafka-topics.ts';

export interface KafkaBusOptions {
  /** Bootstrap brokers, `host:port` each. */
  brokers: readonly string[];
  /** Client id the brokers see in their logs and quotas (default `media-service`). */
  clientId?: string;
  /**
   * Prepended to every topic name on the wire (default `''`). Records handed to handlers carry
   * the name without it, so code keeps using the names in `topics`. Lets tests, or several
   * environments on one cluster, keep their records apart.
   */
  topicPrefix?: string;
  /** Partitions of each topic that ensureTopics creates (default 12); existing topics are left alone. */
  numPartitions?: number;
  /**
   * Replicas of each partition that ensureTopics creates (default: 1 on a single broker, 3 on a
   * cluster, its size when smaller); existing topics with fewer refuse the start (topic-durability.ts).
   */
  replicationFactor?: number | undefined;
  /** `min.insync.replicas` of the topics ensureTopics creates, and the least existing ones may have (default: 2 with 3 replicas, 1 with 2; unset on a single broker). */
  minInsyncReplicas?: number | undefined;
  /** Existing topics less durable than the above are only warned about instead of refusing the start (default false). */
  allowLessDurableTopics?: boolean;
  /** Where kafkajs's own warnings and errors go, besides the bus's logs. */
  logger: Logger;
  /** Time to open a TCP connection to a broker, ms (default 3000). */
  connectionTimeoutMs?: number;
  /** Time a broker has to answer one request, ms (default 30000). */
  requestTimeoutMs?: number;
  /** publish rejects with BusUnavailableError when the brokers have not acknowledged within this, ms (default 5000). */
  publishTimeoutMs?: number;
  /** How long a publish waits for concurrent ones to share its produce request, ms (default 0: the sends of one event-loop turn, and those arriving while the previous request is out). */
  lingerMs?: number;
  /**
   * A consumer that sends no heartbeat for this long loses its partitions, ms (default 15000).
   * Heartbeats come from the fetch loop, not from the handlers, so this bounds how long a
   * crashed member's records wait, not how long a record may run.
   */
  sessionTimeoutMs?: number;
  /** Least time between two heartbeats, ms (default a third of sessionTimeoutMs, at most 3000). */
  heartbeatIntervalMs?: number;
  /**
   * How long a rebalancing group waits for each member to rejoin, ms (default 60000). Members
   * rejoin at their next heartbeat whatever their handlers are doing.
   */
  rebalanceTimeoutMs?: number;
  /** Longest wait of one fetch when there is nothing to read, ms (default 1000); it also delays close. */
  maxWaitTimeMs?: number;
  /** Records one subscription holds fetched and unfinished (default 256); see kafka-subscription.ts. */
  windowRecords?: number;
  /** Pause before a record whose handler rejected is delivered again, ms (default 1000). */
  redeliveryDelayMs?: number;
  /** After a subscription's close aborts running handlers, how long it waits for them to settle, ms (default 5000). */
  abortWaitMs?: number;
  /**
   * How long a close waits for kafkajs to disconnect a consumer, ms (default 3000). A healthy
   * disconnect waits for the fetch in flight (maxWaitTimeMs) and leaves the group; with the brokers
   * gone kafkajs first spends its connection retries (about 9 s), which a stopping process need
   * not wait for: commits are made before, and a member that did not leave is dropped by the
   * group after sessionTimeoutMs. After one disconnect went unanswered, the bus's next ones get
   * 500 ms (createDisconnect).
   */
  disconnectTimeoutMs?: number;
  /**
   * The one consumer group shared by every `tail` reader (default `<topicPrefix>media-tail`;
   * readers naming a kind, `TailOptions.reader`, add `-<reader>`); nothing is committed in it
   * (kafka-tail.ts says why).
   */
  tailGroup?: string;
  /**
   * Consumer group of the forwarder that moves scheduled records (`notBefore`) from the delay
   * topics to their targets once due (default `<topicPrefix>media-scheduler`). Every process
   * that subscribes runs one member.
   */
  schedulerGroup?: string;
}

/** The Kafka event bus, plus the topic set-up that publish and subscribe also run on first use. */
export interface KafkaBus extends EventBus {
  /** Creates the bus's topics (`topics` in event-bus.ts, prefixed) that are missing. Idempotent. */
  ensureTopics(): Promise<TopicReport[]>;
}

/**
 * The event bus on Kafka: an idempotent producer with acks=all, and one consumer per
 * subscription committing by hand after each handled record. Nothing connects until first use
 * (or `ensureTopics()`, which a service's start should await to fail fast). Records with a
 * future `notBefore` go through the delay topics (kafka-delay.ts), forwarded by a consumer
 * that the first subscribe starts.
 */
export function createKafkaBus(options: KafkaBusOptions): KafkaBus {
  const log = options.logger.child({ component: 'kafka-bus' });
  const prefix = options.topicPrefix ?? '';
  const publishTimeoutMs = options.publishTimeoutMs ?? 5000;
  // A consumer kafkajs gave up on takes no more records: the process is no longer ready, so
  // /readyz says 503 and a supervisor restarts it.
  let consumerDown = false;
  const consumerSettings = {
    ...resolveConsumerSettings(options, prefix),
    onConsumerDown: () => void (consumerDown = true),
    nudgeClient: () => kafkaClient(options),
  };
  const kafka = kafkaClient(options);
  const consumers = kafkaClient(options, CONSUMER_RETRY);
  const { producers, readiness, batches } = openPublishing(options, log, publishTimeoutMs);
  const ensureTopics = ensureTopicsOnce(kafka, options, prefix, log);
  const subscriptions = new Set<Subscription>();
  const forwarder = lazyForwarder(() =>
    startDelayForwarder(consumers, log, {
      settings: consumerSettings,
      ...(options.schedulerGroup ? { group: options.schedulerGroup } : {}),
      send: (topicMessages) => producers.send(topicMessages, Date.now() + publishTimeoutMs),
    }),
  );
  let closed = false;
  const assertOpen = (): void => {
    if (closed) throw new BusUnavailableError('the Kafka bus is closed');
  };

  return {
    ensureTopics,

    async publish(records: readonly OutgoingRecord[]): Promise<void> {
      assertOpen();
      if (records.length === 0) return;
      const deadline = Date.now() + publishTimeoutMs;
      await withDeadline(ensureTopics(), deadline, 'ensure topics');
      await batches.send(toPendingMessages(prefix, records, deadline));
    },

    async subscribe(subscribeOptions: SubscribeOptions): Promise<Subscription> {
      assertOpen();
      await ensureTopics();
      // A process that consumes also forwards scheduled records, so that they move on as long
      // as any worker runs; an ingress that only publishes needs none.
      await forwarder.start();
      const sub = await startKafkaSubscription(consumers, log, consumerSettings, subscribeOptions);
      if (closed) {
        await sub.close(0);
        throw new BusUnavailableError('the Kafka bus closed while subscribing');
      }
      return tracked(subscriptions, (graceMs) => sub.close(graceMs));
    },

    async tail(tailOptions): Promise<Subscription> {
      assertOpen();
      await ensureTopics();
      const sub = await openTail(consumers, log, options, consumerSettings, tailOptions);
      const tail = tracked(subscriptions, () => sub.close());
      if (closed) await tail.close();
      return tail;
    },

    async isReady(): Promise<boolean> {
      if (closed || consumerDown) return false;
      if (producers.healthy()) return true;
      return readiness.check();
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.all([...subscriptions].map((s) => s.close(0)));
      await forwarder.close();
      // Publishes already taken are sent (or failed) before the producer disconnects.
      await batches.drain();
      await Promise.all([producers.close(), readiness.close()]);
    },
  };
}

/** The producer slot, the probe that tells when it may publish again, and the batching over it. */
function openPublishing(
  options: KafkaBusOptions,
  log: Logger,
  publishTimeoutMs: number,
): {
  producers: ProducerSlot;
  readiness: ReadyProbe;
  batches: BatchingSender;
} {
  // The producer's connection attempts give up within a publish's deadline, like its sends.
  const producers = createProducerSlot(
    kafkaClient(options, { initialRetryTime: 100, maxRetryTime: 1000, retries: 5 }),
    log,
    publishTimeoutMs,
  );
  const readiness = createReadyProbe(
    kafkaClient(options, { initialRetryTime: 100, maxRetryTime: 1000, retries: 3 }),
    producers,
    log,
    publishTimeoutMs,
  );
  const batches = createBatchingSender(
    producers,
    options.lingerMs === undefined ? {} : { lingerMs: options.lingerMs },
  );
  return { producers, readiness, batches };
}

/** A tail of the bus's topics, read by its own group (one per reader). */
function openTail(
  kafka: KafkaClient,
  log: Logger,
  options: KafkaBusOptions,
  consumerSettings: ConsumerSettings,
  tailOptions: Parameters<typeof startKafkaTail>[3],
): Promise<Subscription> {
  const prefix = options.topicPrefix ?? '';
  const group =
    (options.tailGroup ?? `${prefix}media-tail`) +
    (tailOptions.reader ? `-${tailOptions.reader}` : '');
  return startKafkaTail(
    kafka,
    log,
    {
      topicPrefix: prefix,
      group,
      maxWaitTimeMs: consumerSettings.maxWaitTimeMs,
      disconnect: consumerSettings.disconnect,
    },
    tailOptions,
  );
}

/** Creates the bus's missing topics, once: a failure is tried again at the next call. */
function ensureTopicsOnce(
  kafka: KafkaClient,
  options: KafkaBusOptions,
  prefix: string,
  log: Logger,
): () => Promise<TopicReport[]> {
  return onceSucceeded(() =>
    ensureKafkaTopics(
      kafka,
      Object.values(topics).map((t) => prefix + t),
      {
        numPartitions: options.numPartitions ?? 12,
        durability: {
          replicationFactor: options.replicationFactor,
          minInsyncReplicas: options.minInsyncReplicas,
          allowLessDurable: options.allowLessDurableTopics ?? false,
        },
        compacted: new Set([...compactedTopics].map((t) => prefix + t)),
        onWarning: (reason) => log.warn('kafka.topics_durability_warning', { reason }),
      },
    ).then(
      (report) => {
        const created = report.filter((t) => t.created).map((t) => t.topic);
        if (created.length > 0) log.info('kafka.topics_created', { topics: created });
        for (const t of report)
          log.info('kafka.topic_durability', {
            topic: t.topic,
            replicas: t.replicas,
            minInsyncReplicas: t.minInsyncReplicas,
          });
        return report;
      },
      (error: unknown) => {
        // A topic less durable than configured is for the operator to settle, not a bus outage.
        if (error instanceof TopicDurabilityError) throw error;
        throw asBusUnavailable(error, 'ensure topics');
      },
    ),
  );
}

/** The delay forwarder, started at the first call of `start` (again after a failed start). */
function lazyForwarder(begin: () => Promise<DelayForwarder>): {
  start: () => Promise<DelayForwarder>;
  close: () => Promise<void>;
} {
  let forwarder: Promise<DelayForwarder> | undefined;
  return {
    start: () =>
      (forwarder ??= begin().catch((error: unknown) => {
        forwarder = undefined;
        throw error;
      })),
    close: async () => {
      await forwarder?.then((f) => f.close()).catch(() => undefined);
    },
  };
}

/** A subscription kept in `open` until it is closed, so that the bus's close closes it. */
function tracked(
  open: Set<Subscription>,
  close: (graceMs?: number) => Promise<void>,
): Subscription {
  const subscription: Subscription = {
    close: async (graceMs) => {
      open.delete(subscription);
      await close(graceMs);
    },
  };
  open.add(subscription);
  return subscription;
}

/**
 * The retries of the consumers' client: its cluster operations (connecting, metadata) are tried
 * for about 80 s (300 ms doubling to 5 s apart). Each consumer's own loop (fetch, heartbeat,
 * commit, join) is tried 10 times with metadata at most 3 s old (CONSUMER_RECOVERY in
 * kafka-support.ts), long enough to ride out a broker's death. Starting and topic set-up keep
 * the short default, to fail fast.
 */
const CONSUMER_RETRY = { initialRetryTime: 300, maxRetryTime: 5000, retries: 20 };

function kafkaClient(options: KafkaBusOptions, retry?: KafkaConfig['retry']): KafkaClient {
  return new Kafka({
    clientId: options.clientId ?? 'media-service',
    brokers: [...options.brokers],
    connectionTimeout: options.connectionTimeoutMs ?? 3000,
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    logLevel: kafkaLogLevel,
    logCreator: kafkaLogCreator(options.logger.child({ component: 'kafkajs' })),
    ...(retry ? { retry } : {}),
  });
}

/** Runs `task` on first call and shares its promise; after a failure the next call runs it again. */
function onceSucceeded<T>(task: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () =>
    (running ??= task().catch((error: unknown) => {
      running = undefined;
      throw error;
    }));
}

function resolveConsumerSettings(options: KafkaBusOptions, topicPrefix: string): ConsumerSettings {
  const sessionTimeoutMs = options.sessionTimeoutMs ?? 15_000;
  return {
    topicPrefix,
    sessionTimeoutMs,
    heartbeatIntervalMs:
      options.heartbeatIntervalMs ?? Math.min(3000, Math.floor(sessionTimeoutMs / 3)),
    rebalanceTimeoutMs: options.rebalanceTimeoutMs ?? 60_000,
    maxWaitTimeMs: options.maxWaitTimeMs ?? 1000,
    redeliveryDelayMs: options.redeliveryDelayMs ?? 1000,
    ...(options.windowRecords ? { windowRecords: options.windowRecords } : {}),
    abortWaitMs: options.abortWaitMs ?? 5000,
    disconnect: createDisconnect(
      options.logger.child({ component: 'kafka-bus' }),
      options.disconnectTimeoutMs ?? 3000,
    ),
  };
}

function toPendingMessages(
  prefix: string,
  records: readonly OutgoingRecord[],
  deadline: number,
): PendingMessage[] {
  const now = Date.now();
  return records.map((r) => {
    const route = routeRecord(r, now);
    return {
      topic: prefix + route.topic,
      message: { key: r.key, value: r.value, headers: route.headers },
      deadline,
    };
  });
}
