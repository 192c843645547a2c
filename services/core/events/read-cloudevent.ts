import type { BusRecord } from '../bus/event-bus.ts';

/** A record's CloudEvent as one JSON object (structured shape), or why it is not one. */
export type ReadCloudEvent =
  | { ok: true; event: Record<string, unknown>; mode: 'structured' | 'binary' }
  | { ok: false; reason: string };

/** The record fields the Kafka protocol binding reads; headers are absent on some tests' records. */
export type RecordBytes = Pick<BusRecord, 'value'> & { headers?: Readonly<Record<string, string>> };

const STRUCTURED = /^application\/cloudevents\+json\s*(;|$)/i;
const JSON_DATA = /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i;

/**
 * Reads a record in either content mode of the CloudEvents Kafka protocol binding:
 * binary when a `ce_specversion` header is present (attributes in `ce_` headers, the value is
 * the data, `content-type` is the data's type), structured otherwise (the value is the whole
 * event; `content-type` is `application/cloudevents+json` or absent). Only JSON data is read:
 * every event type of this service carries a JSON object.
 */
export function readCloudEvent(record: RecordBytes): ReadCloudEvent {
  const headers = record.headers ?? {};
  const contentType = headers['content-type'];
  if (headers['ce_specversion'] !== undefined)
    return readBinary(record.value, headers, contentType);
  if (contentType !== undefined && !STRUCTURED.test(contentType))
    return {
      ok: false,
      reason: `content-type ${contentType} without a ce_specversion header is neither structured mode (application/cloudevents+json) nor binary mode`,
    };
  const parsed = parseJson(record.value);
  if (!parsed.ok) return { ok: false, reason: 'value is not JSON' };
  if (!isObject(parsed.value)) return { ok: false, reason: 'value is not a JSON object' };
  return { ok: true, event: parsed.value, mode: 'structured' };
}

function readBinary(
  value: Buffer,
  headers: Readonly<Record<string, string>>,
  contentType: string | undefined,
): ReadCloudEvent {
  if (contentType !== undefined && !JSON_DATA.test(contentType))
    return {
      ok: false,
      reason: `content-type ${contentType}: data must be JSON (application/json)`,
    };
  const parsed = parseJson(value);
  if (!parsed.ok) return { ok: false, reason: 'value (the data, in binary mode) is not JSON' };
  const event: Record<string, unknown> = {};
  for (const [name, text] of Object.entries(headers))
    if (name.startsWith('ce_')) event[name.slice(3)] = text;
  // The binding maps datacontenttype to the content-type header, never to a ce_ header.
  if (contentType !== undefined) event['datacontenttype'] = contentType;
  event['data'] = parsed.value;
  return { ok: true, event, mode: 'binary' };
}

function parseJson(value: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(value.toString('utf8')) as unknown };
  } catch {
    return { ok: false };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
