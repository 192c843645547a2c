import { join } from 'node:path';
import type { Config } from '../config.ts';
import { createEmbeddedBus } from '../bus/embedded-bus.ts';
import type { EventBus } from '../bus/event-bus.ts';
import { createKafkaBus } from '../bus/kafka-bus.ts';
import { withSchemaRegistry } from '../bus/kafka-schema-registry.ts';
import type { Logger } from '../observability/logger.ts';

/** Kafka when KAFKA_BROKERS is set (framed through the schema registry when one is configured); else the embedded bus. */
export function createBus(config: Readonly<Config>, log: Logger, service: string): EventBus {
  if (config.kafkaBrokers.length === 0)
    return createEmbeddedBus({ path: join(config.dataDir, 'bus.sqlite') });
  const kafka = createKafkaBus({
    brokers: config.kafkaBrokers,
    clientId: `media-service-${service}`,
    topicPrefix: config.kafkaTopicPrefix,
    numPartitions: config.kafkaPartitions,
    replicationFactor: config.kafkaReplicationFactor,
    sessionTimeoutMs: config.kafkaSessionTimeoutMs,
    rebalanceTimeoutMs: config.kafkaRebalanceTimeoutMs,
    windowRecords: config.kafkaWindowRecords,
    logger: log,
  });
  return config.schemaRegistryUrl
    ? withSchemaRegistry(kafka, {
        url: config.schemaRegistryUrl,
        log,
        topicPrefix: config.kafkaTopicPrefix,
      })
    : kafka;
}
