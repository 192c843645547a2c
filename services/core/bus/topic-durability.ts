// How durable the bus's topics must be, decided from the settings and the cluster's size, and
// whether the topics that exist are. Pure: kafka-topics.ts asks the brokers and applies it.
import { ConfigError } from '../settings.ts';

/** The replication a cluster of several brokers gets when KAFKA_REPLICATION_FACTOR is unset. */
export const CLUSTER_REPLICATION_FACTOR = 3;
/** The `min.insync.replicas` of topics with 3 or more replicas when KAFKA_MIN_INSYNC_REPLICAS is unset. */
export const CLUSTER_MIN_INSYNC_REPLICAS = 2;

export interface DurabilitySettings {
  /**
   * Replicas of each created topic; unset: 1 on a single broker, else 3 (the cluster's size when
   * smaller). More than the live brokers: the brokers refuse the creation.
   */
  replicationFactor?: number | undefined;
  /**
   * `min.insync.replicas` set on each created topic, and the least an existing one may have;
   * unset: 2 with 3 or more replicas, 1 with 2, and nothing set on a single broker's topics
   * (the broker's own default applies, as before).
   */
  minInsyncReplicas?: number | undefined;
  /** An existing topic less durable than the target is only warned about (default: start refused). */
  allowLessDurable?: boolean | undefined;
}

export interface DurabilityTarget {
  replicationFactor: number;
  /** Undefined: no `min.insync.replicas` is set at creation, and existing topics are not held to one. */
  minInsyncReplicas: number | undefined;
  /** Said once at start (a smaller cluster than the default replication wants). */
  warnings: string[];
}

/** What an existing topic has: the fewest replicas of any of its partitions, and its effective `min.insync.replicas`. */
export interface TopicDurability {
  topic: string;
  replicas: number;
  minInsyncReplicas: number;
}

/** The topic is less durable than the settings ask for, and KAFKA_ALLOW_LESS_DURABLE_TOPICS is not set. */
export class TopicDurabilityError extends ConfigError {
  override name = 'TopicDurabilityError';
}

/** The replication and `min.insync.replicas` that topics get on a cluster of `brokers` live brokers. */
export function durabilityTarget(settings: DurabilitySettings, brokers: number): DurabilityTarget {
  const warnings: string[] = [];
  let replicationFactor = settings.replicationFactor;
  if (replicationFactor === undefined) {
    replicationFactor = brokers > 1 ? Math.min(CLUSTER_REPLICATION_FACTOR, brokers) : 1;
    if (brokers > 1 && brokers < CLUSTER_REPLICATION_FACTOR)
      warnings.push(
        `the cluster has ${brokers} brokers: topics get ${replicationFactor} replicas instead of ${CLUSTER_REPLICATION_FACTOR}`,
      );
  }
  const minInsyncReplicas = settings.minInsyncReplicas ?? defaultMinInsync(replicationFactor);
  if (minInsyncReplicas !== undefined && minInsyncReplicas > replicationFactor)
    throw new TopicDurabilityError(
      `KAFKA_MIN_INSYNC_REPLICAS is ${minInsyncReplicas}, above the ${replicationFactor} replicas of each topic: no write could succeed`,
    );
  return { replicationFactor, minInsyncReplicas, warnings };
}

// Two in-sync copies of three: an acknowledged record survives one broker's loss, and writes go
// on while one broker is down. With two replicas, requiring both would stop writes whenever
// either broker is down, so one is required (the cluster's size warning already said so).
function defaultMinInsync(replicationFactor: number): number | undefined {
  if (replicationFactor >= 3) return CLUSTER_MIN_INSYNC_REPLICAS;
  return replicationFactor === 2 ? 1 : undefined;
}

/** `min.insync.replicas` to set on a topic created now (none when the target leaves it to the broker). */
export function creationConfig(target: DurabilityTarget): { name: string; value: string }[] {
  return target.minInsyncReplicas === undefined
    ? []
    : [{ name: 'min.insync.replicas', value: String(target.minInsyncReplicas) }];
}

/** One sentence per topic that is less durable than `target`; empty when all are durable enough. */
export function durabilityShortfalls(
  target: DurabilityTarget,
  existing: readonly TopicDurability[],
): string[] {
  const shortfalls: string[] = [];
  for (const t of existing) {
    const lacks: string[] = [];
    if (t.replicas < target.replicationFactor)
      lacks.push(`${t.replicas} replicas, ${target.replicationFactor} configured`);
    if (target.minInsyncReplicas !== undefined && t.minInsyncReplicas < target.minInsyncReplicas)
      lacks.push(
        `min.insync.replicas ${t.minInsyncReplicas}, ${target.minInsyncReplicas} configured`,
      );
    if (lacks.length > 0) shortfalls.push(`${t.topic} (${lacks.join('; ')})`);
  }
  return shortfalls;
}

/**
 * Throws TopicDurabilityError when a topic falls short and `allowLessDurable` is not set;
 * returns the warning to log when it is set (undefined when nothing falls short).
 */
export function checkDurability(
  settings: DurabilitySettings,
  target: DurabilityTarget,
  existing: readonly TopicDurability[],
): string | undefined {
  const shortfalls = durabilityShortfalls(target, existing);
  if (shortfalls.length === 0) return undefined;
  const what = `topics less durable than configured: ${shortfalls.join(', ')}`;
  if (settings.allowLessDurable === true) return what;
  throw new TopicDurabilityError(
    `${what}. Raise their replication (kafka-reassign-partitions) and min.insync.replicas ` +
      '(kafka-configs), or set KAFKA_ALLOW_LESS_DURABLE_TOPICS=true to start with them anyway',
  );
}
