import kafkajs, { type Assigner, type Consumer, type Kafka, type PartitionAssigner } from 'kafkajs';
import type { Subscription, TailOptions } from './event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import {
  asBusUnavailable,
  CONSUMER_RECOVERY,
  consumerStallMs,
  createReplacer,
  headersToStrings,
  retried,
  startStallWatch,
  type ConsumerReplacer,
  type Disconnect,
  type StallWatch,
} from './kafka-support.ts';

const { AssignerProtocol } = kafkajs;

export interface TailSettings {
  topicPrefix: string;
  /** The one consumer group of every tail reader of this prefix (see startKafkaTail). */
  group: string;
  maxWaitTimeMs: number;
  /** The consumer's disconnect in close, bounded (KafkaBusOptions.disconnectTimeoutMs). */
  disconnect: Disconnect;
  /** How long the consumer may go without a fetch, a heartbeat or a join before it is replaced, ms (default consumerStallMs: 60 s). */
  stallMs?: number;
}

/**
 * Why one shared group with a "broadcast" assignor, and not a group per reader: kafkajs can only
 * consume as a member of a group, and a group per process start (a random name) piles up on the
 * broker, while a stable name per copy needs an identity the operator must keep unique (two
 * copies under one name would split the partitions and each see half). Here every reader joins
 * the same group, and the group's leader hands every partition to every member; nothing is
 * committed, and each member seeks to its own positions after each join, so members never
 * share progress. The broker forwards assignments as they are, overlapping or not.
 *
 * Every member of a group reads the same topics (the assignor hands out the group's topics to all
 * of them): readers of other topics name another kind (`TailOptions.reader`), and so another
 * group, which also keeps the workers' joins from pausing the ingresses' readers.
 *
 * The cost: a member joining or leaving makes the others rejoin (a pause of a second or so in
 * their reading); a member killed without leaving holds the group's next join until its
 * session ends, so the session is short (10 s; the handler is quick and heartbeats per batch).
 */
const broadcastAssigner: PartitionAssigner = ({ cluster }) => {
  const assigner: Assigner = {
    name: 'MediaBroadcastAssigner',
    version: 0,
    async assign({ members, topics }) {
      const assignment = Object.fromEntries(
        topics.map((topic) => [
          topic,
          cluster.findTopicPartitionMetadata(topic).map((p) => p.partitionId),
        ]),
      );
      return members.map(({ memberId }) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 0,
          assignment,
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return {
        name: 'MediaBroadcastAssigner',
        metadata: AssignerProtocol.MemberMetadata.encode({
          version: 0,
          topics,
          userData: Buffer.alloc(0),
        }),
      };
    },
  };
  return assigner;
};

const TAIL_SESSION_MS = 10_000;

/**
 * Fetch sizes of a tail reader: 256 KiB a partition, 1 MiB a fetch, not kafkajs's 1 MiB and
 * 10 MiB. A start reads the newest `last` records of every partition at once, and each fetched
 * batch stays in memory (its buffers, then its decoded messages, promoted to the old generation
 * while the batch is worked through) until its last record is handled, so smaller fetches keep
 * less memory alive through a start and take no longer (status records are about 1 KiB;
 * `npm run bench:status-view`, docs/benchmarks.md, "Status view start-up").
 */
const TAIL_FETCH_PARTITION_BYTES = 256 * 1024;
const TAIL_FETCH_BYTES = 1024 * 1024;

/** Where each partition starts and where it counts as caught up: `topic:partition` → offsets. */
type Positions = Map<string, { next: bigint; target: bigint }>;

/** Reads the end of each topic's partitions into `handler` (EventBus.tail on Kafka). */
export async function startKafkaTail(
  kafka: Kafka,
  log: Logger,
  settings: TailSettings,
  options: TailOptions & { readyWithinMs: number },
): Promise<Subscription> {
  const positions = await startPositions(kafka, settings.topicPrefix, options);
  let caughtUp: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (caughtUp = resolve));
  const checkCaughtUp = (): void => {
    for (const p of positions.values()) if (p.next < p.target) return;
    caughtUp();
  };
  checkCaughtUp();
  const t: TailState = {
    kafka,
    log,
    settings,
    options,
    positions,
    checkCaughtUp,
    consumer: newTailConsumer(kafka, settings),
    stall: startStallWatch(
      consumerStallMs({
        sessionTimeoutMs: TAIL_SESSION_MS,
        rebalanceTimeoutMs: TAIL_SESSION_MS,
        stallMs: settings.stallMs,
      }),
      (reason) => t.replacer.replace(reason),
    ),
    replacer: createReplacer({
      log,
      disconnect: settings.disconnect,
      retryMs: 1000,
      stopping: () => t.stopping,
      current: () => t.consumer,
      startNext: async () => {
        t.consumer = newTailConsumer(kafka, settings);
        await runTail(t);
      },
    }),
    stopping: false,
  };
  try {
    await runTail(t);
  } catch (error) {
    t.stall.stop();
    await t.consumer.disconnect().catch(() => undefined);
    throw asBusUnavailable(error, `tail (group ${settings.group})`);
  }
  const timer = setTimeout(() => {
    log.warn('kafka.tail_not_caught_up', { afterMs: options.readyWithinMs });
    caughtUp();
  }, options.readyWithinMs);
  await ready;
  clearTimeout(timer);
  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= (async () => {
        t.stopping = true;
        t.stall.stop();
        await settings.disconnect(t.consumer, 'tail disconnect');
      })()),
  };
}

/** What one tail reader's functions share. */
interface TailState {
  kafka: Kafka;
  log: Logger;
  settings: TailSettings;
  options: TailOptions;
  positions: Positions;
  checkCaughtUp(): void;
  consumer: Consumer;
  /** Replaces the consumer when it goes silent (consumerStallMs) or kafkajs gives it up. */
  stall: StallWatch;
  replacer: ConsumerReplacer;
  stopping: boolean;
}

function newTailConsumer(kafka: Kafka, settings: TailSettings): Consumer {
  return kafka.consumer({
    groupId: settings.group,
    partitionAssigners: [broadcastAssigner],
    sessionTimeout: TAIL_SESSION_MS,
    heartbeatInterval: 1000,
    rebalanceTimeout: TAIL_SESSION_MS,
    maxWaitTimeInMs: settings.maxWaitTimeMs,
    maxBytesPerPartition: TAIL_FETCH_PARTITION_BYTES,
    maxBytes: TAIL_FETCH_BYTES,
    allowAutoTopicCreation: false,
    ...CONSUMER_RECOVERY,
  });
}

/**
 * Connects `t.consumer`, subscribes it and runs it from the positions read so far: every
 * (re)join, a replacement's first included, seeks each partition to its position.
 */
async function runTail(t: TailState): Promise<void> {
  const { consumer, settings, positions } = t;
  t.stall.watch(consumer);
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    // Every (re)join starts kafkajs from the committed offsets, of which there are none.
    for (const [topic, partitions] of Object.entries(payload.memberAssignment))
      for (const partition of partitions) {
        const at = positions.get(`${topic}:${partition}`);
        consumer.seek({ topic, partition, offset: (at?.next ?? 0n).toString() });
      }
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    t.log.error('kafka.consumer_crashed', { error: payload.error, restart: payload.restart });
    // kafkajs restarts a consumer after a retriable crash; after any other the reader replaces
    // it, or the status it folds would stand still until the process restarts.
    if (!payload.restart && consumer === t.consumer)
      t.replacer.replace('the consumer crashed and kafkajs gave it up');
  });
  await consumer.connect();
  await consumer.subscribe({
    topics: t.options.topics.map((x) => settings.topicPrefix + x.topic),
    fromBeginning: true,
  });
  await consumer.run({
    autoCommit: false,
    eachBatch: async (payload) => {
      const { batch } = payload;
      const key = `${batch.topic}:${batch.partition}`;
      const at = positions.get(key) ?? { next: 0n, target: 0n };
      positions.set(key, at);
      for (const message of batch.messages) {
        if (consumer !== t.consumer || !payload.isRunning() || payload.isStale()) break;
        const offset = BigInt(message.offset);
        // A fetch started before a join's seek took effect: already read.
        if (offset < at.next) continue;
        await t.options
          .handler({
            topic: batch.topic.slice(settings.topicPrefix.length),
            key: message.key?.toString('utf8') ?? '',
            value: message.value ?? Buffer.alloc(0),
            headers: headersToStrings(message.headers),
          })
          .catch((error: unknown) => t.log.warn('kafka.tail_record_failed', { key, error }));
        at.next = offset + 1n;
      }
      await payload.heartbeat();
      t.checkCaughtUp();
    },
  });
}

/** Each partition starts `last / partitions` records before its end (or at its start). */
async function startPositions(
  kafka: Kafka,
  prefix: string,
  options: TailOptions,
): Promise<Positions> {
  const admin = kafka.admin();
  const positions: Positions = new Map();
  try {
    await admin.connect();
    for (const { topic, last } of options.topics) {
      const offsets = await retried(() => admin.fetchTopicOffsets(prefix + topic));
      const perPartition = BigInt(Math.ceil(last / Math.max(1, offsets.length)));
      for (const p of offsets) {
        const low = BigInt(p.low);
        const high = BigInt(p.high);
        const next = high - perPartition > low ? high - perPartition : low;
        positions.set(`${prefix}${topic}:${p.partition}`, { next, target: high });
      }
    }
  } catch (error) {
    throw asBusUnavailable(error, 'tail start offsets');
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  return positions;
}
