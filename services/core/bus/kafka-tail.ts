import kafkajs, { type Assigner, type Kafka, type PartitionAssigner } from 'kafkajs';
import type { Subscription, TailOptions } from './event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import {
  asBusUnavailable,
  CONSUMER_RECOVERY,
  headersToStrings,
  retried,
  type Disconnect,
} from './kafka-support.ts';

const { AssignerProtocol } = kafkajs;

export interface TailSettings {
  topicPrefix: string;
  /** The one consumer group of every tail reader of this prefix (see startKafkaTail). */
  group: string;
  maxWaitTimeMs: number;
  /** The consumer's disconnect in close, bounded (KafkaBusOptions.disconnectTimeoutMs). */
  disconnect: Disconnect;
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
  const consumer = kafka.consumer({
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
  let caughtUp: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (caughtUp = resolve));
  const checkCaughtUp = (): void => {
    for (const p of positions.values()) if (p.next < p.target) return;
    caughtUp();
  };
  checkCaughtUp();
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    // Every (re)join starts kafkajs from the committed offsets, of which there are none.
    for (const [topic, partitions] of Object.entries(payload.memberAssignment))
      for (const partition of partitions) {
        const at = positions.get(`${topic}:${partition}`);
        consumer.seek({ topic, partition, offset: (at?.next ?? 0n).toString() });
      }
  });
  try {
    await consumer.connect();
    await consumer.subscribe({
      topics: options.topics.map((t) => settings.topicPrefix + t.topic),
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
          if (!payload.isRunning() || payload.isStale()) break;
          const offset = BigInt(message.offset);
          // A fetch started before a join's seek took effect: already read.
          if (offset < at.next) continue;
          await options
            .handler({
              topic: batch.topic.slice(settings.topicPrefix.length),
              key: message.key?.toString('utf8') ?? '',
              value: message.value ?? Buffer.alloc(0),
              headers: headersToStrings(message.headers),
            })
            .catch((error: unknown) => log.warn('kafka.tail_record_failed', { key, error }));
          at.next = offset + 1n;
        }
        await payload.heartbeat();
        checkCaughtUp();
      },
    });
  } catch (error) {
    await consumer.disconnect().catch(() => undefined);
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
    close: () => (closing ??= settings.disconnect(consumer, 'tail disconnect')),
  };
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
