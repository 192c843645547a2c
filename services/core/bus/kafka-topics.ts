import kafkajs, { type Admin, type ITopicMetadata, type Kafka } from 'kafkajs';
import { kafkaErrorType } from './kafka-support.ts';
import {
  checkDurability,
  creationConfig,
  durabilityTarget,
  type DurabilitySettings,
  type DurabilityTarget,
  type TopicDurability,
} from './topic-durability.ts';

const { ConfigResourceTypes } = kafkajs;

export interface TopicReport extends TopicDurability {
  /** The full topic name, prefix included. */
  topic: string;
  partitions: number;
  /** True when this call created the topic. */
  created: boolean;
}

export interface TopicSettings {
  numPartitions: number;
  /** Replication and `min.insync.replicas` (topic-durability.ts decides from these and the cluster's size). */
  durability: DurabilitySettings;
  /** Full names of the topics to create compacted (`cleanup.policy=compact`). */
  compacted?: ReadonlySet<string>;
  /** Told what start should log as a warning (a small cluster, topics let through less durable). */
  onWarning: (message: string) => void;
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

/**
 * Creates the topics that are missing, as durable as the cluster's size and the settings say
 * (existing ones are left as they are), and reports all with their durability. Rejects with
 * TopicDurabilityError when an existing topic is less durable than that, unless allowed.
 */
export async function ensureKafkaTopics(
  kafka: Kafka,
  names: readonly string[],
  settings: TopicSettings,
): Promise<TopicReport[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { brokers } = await admin.describeCluster();
    const target = durabilityTarget(settings.durability, brokers.length);
    target.warnings.forEach(settings.onWarning);
    const missing = await createMissing(admin, names, settings, target);
    const topics = await withLeaders(admin, names);
    const minInsync = await minInsyncReplicas(admin, names);
    const report = names.map((topic) => {
      const partitions = topics.find((t) => t.name === topic)?.partitions ?? [];
      return {
        topic,
        partitions: partitions.length,
        created: missing.includes(topic),
        replicas:
          partitions.length === 0 ? 0 : Math.min(...partitions.map((p) => p.replicas.length)),
        minInsyncReplicas: minInsync.get(topic) ?? 1,
      };
    });
    const warning = checkDurability(settings.durability, target, report);
    if (warning !== undefined) settings.onWarning(warning);
    return report;
  } finally {
    await admin.disconnect();
  }
}

/**
 * Each topic's effective `min.insync.replicas` (its own, else the broker's default). The broker
 * asked may not know a topic created a moment ago yet (each learns of it on its own), so "not
 * yet" answers are asked again for a while, as in withLeaders.
 */
async function minInsyncReplicas(
  admin: Admin,
  names: readonly string[],
): Promise<Map<string, number>> {
  const deadline = Date.now() + 30_000;
  for (let wait = 50; ; wait = Math.min(1000, wait * 2)) {
    try {
      return await describeMinInsync(admin, names);
    } catch (error) {
      if (!NOT_YET.has(kafkaErrorType(error) ?? '') || Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

async function describeMinInsync(
  admin: Admin,
  names: readonly string[],
): Promise<Map<string, number>> {
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: names.map((name) => ({
      type: ConfigResourceTypes.TOPIC,
      name,
      configNames: ['min.insync.replicas'],
    })),
  });
  const values = new Map<string, number>();
  for (const r of resources) {
    const entry = r.configEntries.find((e) => e.configName === 'min.insync.replicas');
    if (entry) values.set(r.resourceName, Number(entry.configValue));
  }
  return values;
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

/**
 * Creates the missing topics, again for a while when a busy broker answers "not yet". One at a
 * time: the broker that answers the listing may not know a topic another client created a
 * moment ago, and only a topic's own answer (created, or already there) tells whether this call
 * made it.
 */
async function createMissing(
  admin: Admin,
  names: readonly string[],
  settings: TopicSettings,
  target: DurabilityTarget,
): Promise<string[]> {
  const created: string[] = [];
  const deadline = Date.now() + 30_000;
  for (let wait = 100; ; wait = Math.min(2000, wait * 2)) {
    try {
      const existing = new Set(await admin.listTopics());
      for (const topic of names.filter((name) => !existing.has(name) && !created.includes(name)))
        // kafkajs answers false, not an error, when the topic exists already (another process
        // may create the same topics at the same moment), which is what we want.
        if (await admin.createTopics({ waitForLeaders: false, topics: [topicSpec(topic)] }))
          created.push(topic);
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

  function topicSpec(topic: string) {
    return {
      topic,
      numPartitions: settings.numPartitions,
      replicationFactor: target.replicationFactor,
      configEntries: [
        ...creationConfig(target),
        ...(settings.compacted?.has(topic) ? COMPACTED_CONFIG : []),
      ],
    };
  }
}
