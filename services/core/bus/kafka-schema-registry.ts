import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import {
  BusUnavailableError,
  topics,
  type BusRecord,
  type EventBus,
  type OutgoingRecord,
  type RecordHandler,
} from './event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import type * as Registry from '@kafkajs/confluent-schema-registry';

const require = createRequire(import.meta.url);

/** Confluent wire format: magic byte 0, then the schema id as a 4-byte big-endian integer. */
export function isRegistryFramed(value: Buffer): boolean {
  return value.length > 5 && value[0] === 0;
}

export interface SchemaRegistryOptions {
  /** e.g. http://registry:8081 (Confluent) or http://apicurio:8080/apis/ccompat/v7. */
  url: string;
  log: Logger;
  /** The bus's topic prefix, so that subjects name the topics as they are on the wire. */
  topicPrefix?: string;
  /** The envelope schema registered for every topic (default: schemas/events/envelope.v1). */
  envelopeSchemaPath?: string;
}

/**
 * Wraps a bus so that producers register the envelope schema (subject `<topic>-value`, JSON
 * Schema) and frame every value with its id, and consumers take both framed and plain JSON
 * values. A framed value that cannot be decoded is passed on as it is, so the consumer's own
 * validation dead-letters it.
 */
export function withSchemaRegistry(bus: EventBus, options: SchemaRegistryOptions): EventBus {
  // Loaded here, only when a registry is configured (about 6 MB). The client is CommonJS with a
  // default export the ESM loader leaves wrapped, hence require.
  const { SchemaRegistry, SchemaType } =
    require('@kafkajs/confluent-schema-registry') as typeof Registry;
  const schemaPath =
    options.envelopeSchemaPath ??
    new URL('../../../schemas/events/envelope.v1.schema.json', import.meta.url).pathname;
  // Registered exactly as shipped, so a producer that looks the file up (auto-registration off)
  // finds it. The client compiles the schema once per id; without addUsedSchema: false, ajv
  // would refuse the second compile of a schema with the same $id.
  const schema = readFileSync(schemaPath, 'utf8');
  const registry = new SchemaRegistry(
    { host: options.url, clientId: 'media-service' },
    {
      [SchemaType.JSON]: {
        ajvInstance: new Ajv2020({ strict: false, validateFormats: false, addUsedSchema: false }),
      },
    },
  );
  const ids = new Map<string, Promise<number>>();
  const idFor = (topic: string): Promise<number> => {
    let id = ids.get(topic);
    if (!id) {
      const subject = `${options.topicPrefix ?? ''}${topic}-value`;
      id = registry.register({ type: SchemaType.JSON, schema }, { subject }).then((r) => r.id);
      id.catch(() => ids.delete(topic));
      ids.set(topic, id);
    }
    return id;
  };
  const frame = async (record: OutgoingRecord): Promise<OutgoingRecord> => {
    // Dead letters and job status records are not events: they stay plain JSON, framed by nothing.
    if (record.topic === topics.deadLetter || record.topic === topics.jobStatus) return record;
    const id = await idFor(record.topic);
    return {
      ...record,
      value: await registry.encode(id, JSON.parse(record.value.toString('utf8')) as unknown),
    };
  };
  const unframe = async (value: Buffer): Promise<Buffer> => {
    if (!isRegistryFramed(value)) return value;
    try {
      return Buffer.from(JSON.stringify(await registry.decode(value)));
    } catch (error) {
      options.log.warn('schema_registry.decode_failed', { error });
      return value;
    }
  };
  return {
    ...bus,
    async publish(records) {
      const framed = await Promise.all(records.map(frame)).catch((error: unknown) => {
        throw new BusUnavailableError(
          `the schema registry did not answer: ${(error as Error).message}`,
        );
      });
      await bus.publish(framed);
    },
    subscribe(subscribeOptions) {
      const handler: RecordHandler = async (record, context) =>
        subscribeOptions.handler({ ...record, value: await unframe(record.value) }, context);
      const { fairness } = subscribeOptions;
      // Read the tenant from the JSON behind the frame (JSON Schema framing is 5 bytes + JSON).
      const tenantOf = (record: BusRecord): string =>
        fairness
          ? fairness.tenantOf(
              isRegistryFramed(record.value)
                ? { ...record, value: record.value.subarray(5) }
                : record,
            )
          : '';
      return bus.subscribe({
        ...subscribeOptions,
        handler,
        ...(fairness ? { fairness: { ...fairness, tenantOf } } : {}),
      });
    },
    tail(tailOptions) {
      return bus.tail({
        ...tailOptions,
        handler: async (record) =>
          tailOptions.handler({ ...record, value: await unframe(record.value) }),
      });
    },
  };
}
