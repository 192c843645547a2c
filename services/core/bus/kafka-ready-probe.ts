import kafkajs, { type Admin, type Kafka } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import type { ProducerSlot } from './kafka-producer.ts';
import { withDeadline } from './kafka-support.ts';

const { ConfigResourceTypes } = kafkajs;

export interface ReadyProbe {
  /** Whether the bus can take a publish now; one probe runs at a time, shared by concurrent callers. */
  check(): Promise<boolean>;
  /** Disconnects the probe's admin client, if any. */
  close(): Promise<void>;
}

/**
 * Readiness of the producing side (for /readyz). A producer that connects says little: on a
 * cluster whose broker died, the bootstrap brokers answer at once while the dead broker still
 * leads its partitions (until the controller fences it, about 9 s), and every publish to them
 * fails. So after a failed publish the bus is not ready until a publish succeeds again or this
 * probe finds every partition of the failed topics with a leader that answers (a ListOffsets
 * request goes to each leader) and at least `min.insync.replicas` replicas in sync (what an
 * acks=all produce needs).
 */
export function createReadyProbe(
  kafka: Kafka,
  producers: ProducerSlot,
  log: Logger,
  timeoutMs: number,
): ReadyProbe {
  let running: Promise<boolean> | undefined;
  let admin: Admin | undefined;

  const probe = async (deadline: number): Promise<boolean> => {
    await producers.connect(deadline);
    const topics = producers.failedTopics();
    if (topics.length === 0) return true;
    admin ??= kafka.admin();
    const client = admin;
    await withDeadline(client.connect(), deadline, 'ready probe connect');
    await withDeadline(partitionsWritable(client, topics), deadline, 'ready probe');
    producers.recovered();
    log.info('kafka.publish_recovered', { topics });
    return true;
  };

  const dropAdmin = (): Promise<void> => {
    const stale = admin;
    admin = undefined;
    return stale ? stale.disconnect().catch(() => undefined) : Promise.resolve();
  };

  return {
    check: () =>
      (running ??= probe(Date.now() + timeoutMs)
        .catch((error: unknown) => {
          log.debug('kafka.ready_probe_failed', { error });
          // A fresh admin next time: this one may hold connections to a dead broker.
          void dropAdmin();
          return false;
        })
        .finally(() => {
          running = undefined;
        })),
    close: async () => {
      await running;
      await withDeadline(dropAdmin(), Date.now() + timeoutMs, 'ready probe close').catch(
        () => undefined,
      );
    },
  };
}

/** Resolves when every partition of `topics` has a live leader and enough replicas in sync. */
async function partitionsWritable(admin: Admin, topics: readonly string[]): Promise<void> {
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: topics.map((name) => ({
      type: ConfigResourceTypes.TOPIC,
      name,
      configNames: ['min.insync.replicas'],
    })),
  });
  const minIsr = new Map(
    resources.map((r) => [
      r.resourceName,
      Number(r.configEntries.find((e) => e.configName === 'min.insync.replicas')?.configValue ?? 1),
    ]),
  );
  const metadata = await admin.fetchTopicMetadata({ topics: [...topics] });
  for (const topic of metadata.topics)
    for (const p of topic.partitions) {
      const needed = minIsr.get(topic.name) ?? 1;
      if (p.leader < 0 || p.isr.length < needed)
        throw new Error(
          `${topic.name}[${p.partitionId}]: leader ${p.leader}, ${p.isr.length} in sync of ${needed} needed`,
        );
    }
  // ListOffsets goes to each partition's leader: a leader that is gone does not answer.
  for (const topic of topics) await admin.fetchTopicOffsets(topic);
}
