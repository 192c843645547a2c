import { randomUUID } from 'node:crypto';
import type { OutgoingRecord } from '../bus/event-bus.ts';
import { dataSchemaOf, type Contracts, type EventType } from '../contracts/load-contracts.ts';
import type {
  CallbackDelivery,
  CallbackStatus,
  JobCancelRequested,
  JobFailed,
  JobProcessing,
  JobProgress,
  JobRequested,
  JobRetryScheduled,
  JobSucceeded,
} from '../contracts/types.generated.ts';
import { readCloudEvent, type RecordBytes } from './read-cloudevent.ts';

export interface EventDataOf {
  'media.job.requested': JobRequested;
  'media.job.processing': JobProcessing;
  'media.job.progress': JobProgress;
  'media.job.succeeded': JobSucceeded;
  'media.job.failed': JobFailed;
  'media.job.retry-scheduled': JobRetryScheduled;
  'media.job.cancel-requested': JobCancelRequested;
  'media.callback.delivery': CallbackDelivery;
  'media.callback.status': CallbackStatus;
}

/**
 * The CloudEvents attributes the service reads. Producers may leave out every optional one; a
 * missing `time` is read as the moment of decoding, so that readers always have one.
 */
export interface EventAttributes {
  specversion: '1.0';
  id: string;
  source: string;
  time: string;
  subject?: string;
  dataschema?: string;
  datacontenttype?: string;
}

/** A decoded, validated event. */
export type JobEvent = {
  [T in EventType]: EventAttributes & { type: T; data: EventDataOf[T] };
}[EventType];

/**
 * A refused record says why, and carries what could still be read of it (the event type and
 * the unvalidated data), so a consumer can tell the job's owner when an identity is in there.
 */
export type Decoded =
  { ok: true; event: JobEvent } | { ok: false; reason: string; type?: string; data?: unknown };

export interface EventCodec {
  /**
   * An event as a bus record (CloudEvents 1.0, structured JSON). `id` defaults to a stable id
   * for outcome events (`jobId:type:attempt`), so a redelivered job yields the same id; progress
   * and callback events get a random one (several of them share a job and attempt).
   */
  encode<T extends EventType>(
    topic: string,
    type: T,
    data: EventDataOf[T],
    id?: string,
  ): OutgoingRecord;
  /**
   * Parses and validates a record in either content mode of the CloudEvents Kafka binding
   * (structured or binary): the envelope's required attributes, the type, the data against its
   * versioned schema, and `subject` equal to `data.jobId` when present.
   */
  decode(record: RecordBytes): Decoded;
}

/** `transcode.width must …` → `data.transcode.width must …`; authored sentences stay as they are. */
function inData(message: string): string {
  return /^[A-Za-z]+[\w.[\]]* (must|is|are) /.test(message) ? `data.${message}` : message;
}

export const CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

export function createEventCodec(contracts: Contracts, source: string): EventCodec {
  return {
    encode(topic, type, data, id) {
      const check = contracts.events[type](data);
      if (!check.ok)
        throw new Error(`refusing to publish an invalid ${type} event: ${check.message}`);
      const outcome = type.startsWith('media.job.') && type !== 'media.job.progress';
      const stableId =
        outcome && 'attempt' in data ? `${data.jobId}:${type}:${data.attempt}` : randomUUID();
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
      return {
        topic,
        key: data.jobId,
        value: Buffer.from(JSON.stringify(envelope)),
        headers: { 'content-type': CONTENT_TYPE, 'ce-type': type },
      };
    },

    decode(record) {
      const read = readCloudEvent(record);
      if (!read.ok) return read;
      const type = typeof read.event['type'] === 'string' ? { type: read.event['type'] } : {};
      const seen = { ...type, ...('data' in read.event ? { data: read.event['data'] } : {}) };
      const envelope = contracts.envelope(read.event);
      if (!envelope.ok) return { ok: false, reason: `envelope: ${envelope.message}`, ...seen };
      const data = contracts.events[envelope.value.type](envelope.value.data);
      // The contract names fields below data; the producer knows them by their place in the event.
      if (!data.ok)
        return { ok: false, reason: `${envelope.value.type}: ${inData(data.message)}`, ...seen };
      const { subject, time } = envelope.value;
      if (subject !== undefined && subject !== (data.value as { jobId: string }).jobId)
        return { ok: false, reason: 'subject is not the job id of data (data.jobId)', ...seen };
      return {
        ok: true,
        event: { ...envelope.value, time: time ?? new Date().toISOString() } as JobEvent,
      };
    },
  };
}
