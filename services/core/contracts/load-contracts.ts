import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { FormatsPlugin } from 'ajv-formats';
import type { Plugin } from 'ajv';
import type {
  CallbackDelivery,
  CallbackStatus,
  EventEnvelope,
  JobCancelRequested,
  JobFailed,
  JobProcessing,
  JobProgress,
  JobRequested,
  JobRetryScheduled,
  JobSucceeded,
  StreamRequest,
  SummaryRequest,
  TranscodeRequest,
} from './types.generated.ts';
import { describeValidationError } from './describe-validation-error.ts';

// ajv's plugins are CommonJS with a `default` the ESM loader does not unwrap the way tsc expects.
const require = createRequire(import.meta.url);
const addFormats = require('ajv-formats') as FormatsPlugin;
const addErrors = require('ajv-errors') as Plugin<unknown>;

export const SCHEMA_BASE = 'https://media-service.dev/schemas/';
export const defaultSchemasDir = new URL('../../../schemas/', import.meta.url).pathname;

/** Result of checking wire data against a contract. */
export type Checked<T> = { ok: true; value: T } | { ok: false; message: string; errors: string[] };

/** A compiled contract: wire data in, a typed value or a message a person can act on out. */
export type Contract<T> = (data: unknown) => Checked<T>;

export interface Contracts {
  transcodeRequest: Contract<TranscodeRequest>;
  summaryRequest: Contract<SummaryRequest>;
  streamRequest: Contract<StreamRequest>;
  events: {
    'media.job.requested': Contract<JobRequested>;
    'media.job.processing': Contract<JobProcessing>;
    'media.job.progress': Contract<JobProgress>;
    'media.job.succeeded': Contract<JobSucceeded>;
    'media.job.failed': Contract<JobFailed>;
    'media.job.retry-scheduled': Contract<JobRetryScheduled>;
    'media.job.cancel-requested': Contract<JobCancelRequested>;
    'media.callback.delivery': Contract<CallbackDelivery>;
    'media.callback.status': Contract<CallbackStatus>;
  };
  envelope: Contract<EventEnvelope>;
  /** The name rule of a watermark library image (`imageName` of the watermark schema). */
  imageName: Contract<string>;
  /** The OpenAPI 3.1 description of the HTTP API (schemas/openapi.json, generated from the schemas). */
  openApi: string;
}

export type EventType = keyof Contracts['events'];

/** The schema URL an event type's data is checked against (the envelope's `dataschema`). */
export const dataSchemaOf: Record<EventType, string> = {
  'media.job.requested': `${SCHEMA_BASE}events/job-requested.v1.schema.json`,
  'media.job.processing': `${SCHEMA_BASE}events/job-processing.v1.schema.json`,
  'media.job.progress': `${SCHEMA_BASE}events/job-progress.v1.schema.json`,
  'media.job.succeeded': `${SCHEMA_BASE}events/job-succeeded.v1.schema.json`,
  'media.job.failed': `${SCHEMA_BASE}events/job-failed.v1.schema.json`,
  'media.job.retry-scheduled': `${SCHEMA_BASE}events/job-retry-scheduled.v1.schema.json`,
  'media.job.cancel-requested': `${SCHEMA_BASE}events/job-cancel-requested.v1.schema.json`,
  'media.callback.delivery': `${SCHEMA_BASE}events/callback-delivery.v1.schema.json`,
  'media.callback.status': `${SCHEMA_BASE}events/callback-status.v1.schema.json`,
};

function contractOf<T>(validate: ValidateFunction, root: string): Contract<T> {
  return (data) => {
    if (validate(data)) return { ok: true, value: data as T };
    const errors = (validate.errors ?? []).map((e: ErrorObject) =>
      describeValidationError(e, root),
    );
    return { ok: false, message: describeProblems(validate.errors ?? [], root), errors };
  };
}

/**
 * One sentence per field that breaks a rule, joined: a caller fixes every problem in one go.
 * ajv reports each problem of a field several ways (a branch and its parent, a rule and its
 * authored message), so each field gets its most useful sentence only.
 */
function describeProblems(errors: ErrorObject[], root: string): string {
  const byField = new Map<string, ErrorObject[]>();
  for (const error of errors) {
    const field = fieldOf(error);
    byField.set(field, [...(byField.get(field) ?? []), error]);
  }
  const groups = [...byField.values()].flatMap(byPlace);
  // "must match the then schema" says only that a rule below failed; that rule speaks for itself.
  const specific = groups.filter((g) => g.some((e) => !COMPOSITE.has(e.keyword)));
  // A field's own bad value first, then what its value asks of others (the creds of a bucket URL).
  const located = (g: ErrorObject[]): number => (g.some((e) => e.instancePath !== '') ? 0 : 1);
  const ordered = (specific.length > 0 ? specific : groups).sort((a, b) => located(a) - located(b));
  const sentences = ordered.map((group) => pickMostUseful(group, root));
  return [...new Set(sentences)].join('; ') || `${root} is invalid`;
}

/**
 * A field's errors split by the place inside it they are about (`captions.files[0].language`,
 * `captions.burnIn`), so an object's several problems are each said; kept whole when a branch
 * (oneOf, if) failed, whose alternatives would otherwise each be said.
 */
function byPlace(group: ErrorObject[]): ErrorObject[][] {
  if (group.some((e) => COMPOSITE.has(e.keyword))) return [group];
  const byPath = new Map<string, ErrorObject[]>();
  for (const error of group) {
    // The field's own problems (its missing or unknown properties) stay one sentence.
    const nested = error.instancePath.split('/').length > 2;
    const { missingProperty } = error.params as { missingProperty?: unknown };
    const missing = typeof missingProperty === 'string' ? missingProperty : '';
    const place = nested ? `${error.instancePath}/${missing}` : '';
    byPath.set(place, [...(byPath.get(place) ?? []), error]);
  }
  return [...byPath.values()];
}

/** Keywords that only say "a branch failed"; the branch's own error is the actionable one. */
const COMPOSITE = new Set(['if', 'anyOf', 'oneOf', 'allOf']);

/** The top-level field an error is about: its path's first part, or the property it names. */
function fieldOf(error: ErrorObject): string {
  const [, first] = error.instancePath.split('/');
  if (first !== undefined) return first;
  const params = error.params as Record<string, unknown>;
  const inner = (params['errors'] as ErrorObject[] | undefined)?.[0]?.params as
    Record<string, unknown> | undefined;
  const named =
    params['missingProperty'] ??
    params['additionalProperty'] ??
    params['unevaluatedProperty'] ??
    inner?.['missingProperty'];
  return typeof named === 'string' ? named : '';
}

function pickMostUseful(errors: ErrorObject[], root: string): string {
  // A message written into the schema (ajv-errors) states the rule best.
  const authored = errors.filter((e) => e.keyword === 'errorMessage');
  const specific = errors.filter((e) => !COMPOSITE.has(e.keyword));
  // ajv reports inner schemas first, so the last authored message is the outermost rule.
  const chosen = authored.at(-1) ?? specific[0] ?? errors[0];
  return chosen ? describeValidationError(chosen, root) : `${root} is invalid`;
}

/**
 * Compiles every schema under `schemasDir` once, with one strict ajv instance.
 * Call at start-up; the returned functions are pure.
 */
export function loadContracts(schemasDir: string = defaultSchemasDir): Contracts {
  // strictTypes/strictRequired are off: if/then fragments test an object their parent types.
  const ajv = new Ajv2020({
    strict: true,
    strictTypes: false,
    strictRequired: false,
    allErrors: true,
  });
  addFormats(ajv, ['uuid', 'date-time', 'uri']);
  addErrors(ajv);
  for (const entry of readdirSync(schemasDir, { recursive: true, encoding: 'utf8' })) {
    if (!entry.endsWith('.schema.json')) continue;
    ajv.addSchema(JSON.parse(readFileSync(join(schemasDir, entry), 'utf8')) as object);
  }
  const get = (id: string): ValidateFunction => {
    const fn = ajv.getSchema(SCHEMA_BASE + id);
    if (!fn) throw new Error(`schema ${id} not found under ${schemasDir}`);
    return fn;
  };
  return {
    transcodeRequest: contractOf(get('http/transcode-request.v1.schema.json'), 'body'),
    summaryRequest: contractOf(get('http/summary-request.v1.schema.json'), 'body'),
    streamRequest: contractOf(get('http/stream-request.v1.schema.json'), 'body'),
    events: {
      'media.job.requested': contractOf(get('events/job-requested.v1.schema.json'), 'data'),
      'media.job.processing': contractOf(get('events/job-processing.v1.schema.json'), 'data'),
      'media.job.progress': contractOf(get('events/job-progress.v1.schema.json'), 'data'),
      'media.job.succeeded': contractOf(get('events/job-succeeded.v1.schema.json'), 'data'),
      'media.job.failed': contractOf(get('events/job-failed.v1.schema.json'), 'data'),
      'media.job.retry-scheduled': contractOf(
        get('events/job-retry-scheduled.v1.schema.json'),
        'data',
      ),
      'media.job.cancel-requested': contractOf(
        get('events/job-cancel-requested.v1.schema.json'),
        'data',
      ),
      'media.callback.delivery': contractOf(get('events/callback-delivery.v1.schema.json'), 'data'),
      'media.callback.status': contractOf(get('events/callback-status.v1.schema.json'), 'data'),
    },
    envelope: contractOf(get('events/envelope.v1.schema.json'), 'event'),
    imageName: contractOf(get('common/watermark.v1.schema.json#/$defs/imageName'), 'name'),
    openApi: readFileSync(join(schemasDir, 'openapi.json'), 'utf8'),
  };
}
