import type { Admin, ITopicMetadata, Kafka } from 'kafkajs';
import { kafkaErrorType } from './kafka-support.ts';

export interface TopicReport {
  /** The full topic name, prefix included. */
  topic: string;
  partitions: number;
  /** True when this call created the topic. */
  created: boolean;
}

export interface TopicSettings {
  numPartitions: number;
  replicationFactor: number;
  /** Full names of the topics to create compacted (`cleanup.policy=compact`). */
  compacted?: ReadonlySet<string>;
}

/**
 * A compacted topic keeps the newest record of each key; a key's older records go once their
 * segment is closed (an hour, or 16 MiB: small, so that the uncompacted head a reader of the
 * newest records meets holds few older states of the same jobs) and the cleaner passes.
 * Records are never deleted by age: a job's status stays until a newer one replaces it;
 * readers bound what they load by reading only the newest records (`EventBus.tail`).
 */
export const COMPACTED_CONFIG = [
  { name: 'cleanup.policy', value: 'compact' },
  { name: 'segment.ms', value: String(3600_000) },
  { name: 'segment.bytes', value: String(16 * 1024 * 1024) },
  { name: 'min.cleanable.dirty.ratio', value: '0.2' },
];

/** Creates the topics that are missing (existing ones are left as they are) and reports all. */
export async function ensureKafkaTopics(
  kafka: Kafka,
  names: readonly string[],
  settings: TopicSettings,
): Promise<TopicReport[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const missing = await createMissing(admin, names, settings);
    const topics = await withLeaders(admin, names);
    return names.map((topic) => ({
      topic,
      partitions: topics.find((t) => t.name === topic)?.partitions.length ?? 0,
      created: missing.includes(topic),
    }));
  } finally {
    await admin.disconnect();
  }
}

// A broker answers "unknown topic or partition" for a while after creating many partitions
// (kafkajs's own wait for leaders retries only "leader not available"), so wait here.
const NOT_YET = new Set([
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'REQUEST_TIMED_OUT',
]);

async function withLeaders(admin: Admin, names: readonly string[]): Promise<ITopicMetadata[]> {
  const deadline = Date.now() + 30_000;
  for (let wait = 50; ; wait = Math.min(1000, wait * 2)) {
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [...names] });
      const ready = topics.every((t) => t.partitions.every((p) => p.leader >= 0));
      if (ready || Date.now() > deadline) return topics;
    } catch (error) {
      const type = kafkaErrorType(error);
      if (type === undefined || !NOT_YET.has(type) || Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** Creates the missing topics, again for a while when a busy broker answers "not yet". */
async function createMissing(
  admin: Admin,
  names: readonly string[],
  settings: TopicSettings,
): Promise<string[]> {
  const created: string[] = [];
  const deadline = Date.now() + 30_000;
  for (let wait = 100; ; wait = Math.min(2000, wait * 2)) {
    try {
      const existing = new Set(await admin.listTopics());
      const missing = names.filter((name) => !existing.has(name));
      // Another process may create the same topics at the same moment; kafkajs then answers
      // false instead of failing, which is what we want.
      if (missing.length > 0)
        await admin.createTopics({
          waitForLeaders: false,
          topics: missing.map((topic) => ({
            topic,
            numPartitions: settings.numPartitions,
            replicationFactor: settings.replicationFactor,
            ...(settings.compacted?.has(topic) ? { configEntries: COMPACTED_CONFIG } : {}),
          })),
        });
      created.push(...missing);
      return created;
    } catch (error) {
      // A timed-out creation may have gone through: the next pass lists what exists.
      const retriable =
        (error as { name?: string }).name === 'KafkaJSAggregateError' ||
        NOT_YET.has(kafkaErrorType(error) ?? '');
      if (!retriable || Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}
