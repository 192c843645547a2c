import { join } from 'node:path';
import type { Config } from '../config.ts';
import { createEmbeddedBus } from '../bus/embedded-bus.ts';
import type { EventBus } from '../bus/event-bus.ts';
import type { Logger } from '../observability/logger.ts';

/** Kafka when KAFKA_BROKERS is set (framed through the schema registry when one is configured); else the embedded bus. */
export function createBus(config: Readonly<Config>, log: Logger, service: string): EventBus {
  if (config.kafkaBrokers.length === 0)
    return createEmbeddedBus({ path: join(config.dataDir, 'bus.sqlite') });
  // Imported only in Kafka mode: the all-in-one process never carries kafkajs (about 10 MB).
  return deferredBus(
    (async () => {
      const { createKafkaBus } = await import('../bus/kafka-bus.ts');
      const kafka = createKafkaBus({
        brokers: config.kafkaBrokers,
        clientId: `media-service-${service}`,
        topicPrefix: config.kafkaTopicPrefix,
        numPartitions: config.kafkaPartitions,
        replicationFactor: config.kafkaReplicationFactor,
        minInsyncReplicas: config.kafkaMinInsyncReplicas,
        allowLessDurableTopics: config.kafkaAllowLessDurableTopics,
        sessionTimeoutMs: config.kafkaSessionTimeoutMs,
        rebalanceTimeoutMs: config.kafkaRebalanceTimeoutMs,
        windowRecords: config.kafkaWindowRecords,
        publishTimeoutMs: config.kafkaPublishTimeoutMs,
        logger: log,
      });
      if (!config.schemaRegistryUrl) return kafka;
      const { withSchemaRegistry } = await import('../bus/kafka-schema-registry.ts');
      return withSchemaRegistry(kafka, {
        url: config.schemaRegistryUrl,
        log,
        topicPrefix: config.kafkaTopicPrefix,
      });
    })(),
  );
}

/** A bus whose implementation is still being imported; every call waits for it. */
function deferredBus(loading: Promise<EventBus>): EventBus {
  // A failed import surfaces at the first call, not as an unhandled rejection meanwhile.
  loading.catch(() => undefined);
  return {
    publish: async (records) => (await loading).publish(records),
    subscribe: async (options) => (await loading).subscribe(options),
    tail: async (options) => (await loading).tail(options),
    isReady: () =>
      loading.then(
        (bus) => bus.isReady(),
        () => false,
      ),
    close: async () => (await loading).close(),
  };
}
