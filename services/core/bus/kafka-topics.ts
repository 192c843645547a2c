import type { Kafka } from 'kafkajs';
import { retried } from './kafka-support.ts';

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
    const existing = new Set(await admin.listTopics());
    const missing = names.filter((name) => !existing.has(name));
    if (missing.length > 0) {
      // Another process may create the same topics at the same moment; kafkajs then answers
      // false instead of failing, which is what we want.
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((topic) => ({
          topic,
          numPartitions: settings.numPartitions,
          replicationFactor: settings.replicationFactor,
          ...(settings.compacted?.has(topic) ? { configEntries: COMPACTED_CONFIG } : {}),
        })),
      });
    }
    const { topics } = await retried(() => admin.fetchTopicMetadata({ topics: [...names] }));
    return names.map((topic) => ({
      topic,
      partitions: topics.find((t) => t.name === topic)?.partitions.length ?? 0,
      created: missing.includes(topic),
    }));
  } finally {
    await admin.disconnect();
  }
}
