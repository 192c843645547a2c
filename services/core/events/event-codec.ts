import { randomUUID } from 'node:crypto';
import type { BusRecord, OutgoingRecord } from '../bus/event-bus.ts';
import { dataSchemaOf, type Contracts, type EventType } from '../contracts/load-contracts.ts';
import type {
  CallbackDelivery,
  CallbackStatus,
  EventEnvelope,
  JobFailed,
  JobProcessing,
  JobProgress,
  JobRequested,
  JobSucceeded,
} from '../contracts/types.generated.ts';

export interface EventDataOf {
  'media.job.requested': JobRequested;
  'media.job.processing': JobProcessing;
  'media.job.progress': JobProgress;
  'media.job.succeeded': JobSucceeded;
  'media.job.failed': JobFailed;
  'media.callback.delivery': CallbackDelivery;
  'media.callback.status': CallbackStatus;
}

/** Events about a job's own run (every one names its attempt), as opposed to its callback. */
export type JobRunEvent = Extract<JobEvent, { type: `media.job.${string}` }>;

/** A decoded, validated event. */
export type JobEvent = {
  [T in EventType]: Omit<EventEnvelope, 'type' | 'data'> & { type: T; data: EventDataOf[T] };
}[EventType];

export type Decoded = { ok: true; event: JobEvent } | { ok: false; reason: string };

export interface EventCodec {
  /**
   * An event as a bus record (CloudEvents 1.0, structured JSON). `id` defaults to a stable id
   * for outcome events (`jobId:type:attempt`), so a redelivered job yields the same id; progress
   * and callback events get a random one (several of them share a job and attempt).
   */
  encode<T extends EventType>(topic: string, type: T, data: EventDataOf[T], id?: string): OutgoingRecord;
  /** Parses and validates a record: envelope, type, and data against its versioned schema. */
  decode(record: Pick<BusRecord, 'value'>): Decoded;
}

export const CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

export function createEventCodec(contracts: Contracts, source: string): EventCodec {
  return {
    encode(topic, type, data, id) {
      const check = contracts.events[type](data);
      if (!check.ok) throw new Error(`refusing to publish an invalid ${type} event: ${check.message}`);
      const outcome = type.startsWith('media.job.') && type !== 'media.job.progress';
      const stableId = outcome && 'attempt' in data ? `${data.jobId}:${type}:${data.attempt}` : randomUUID();
      const envelope = {
        specversion: '1.0',
        id: id ?? stableId,
        type,
        source,
        time: new Date().toISOString(),
        subject: data.jobId,
        dataschema: dataSchemaOf[type],
        datacontenttype: 'application/json',
        data,
      };
      return { topic, key: data.jobId, value: Buffer.from(JSON.stringify(envelope)), headers: { 'content-type': CONTENT_TYPE, 'ce-type': type } };
    },

    decode(record) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(record.value.toString('utf8'));
      } catch {
        return { ok: false, reason: 'value is not JSON' };
      }
      const envelope = contracts.envelope(parsed);
      if (!envelope.ok) return { ok: false, reason: `envelope: ${envelope.message}` };
      const type = envelope.value.type;
      const data = contracts.events[type](envelope.value.data);
      if (!data.ok) return { ok: false, reason: `${type} data: ${data.message}` };
      if (envelope.value.subject !== (data.value as { jobId: string }).jobId)
        return { ok: false, reason: 'subject is not the job id of data' };
      return { ok: true, event: envelope.value as JobEvent };
    },
  };
}
