import { createHash, createHmac } from 'node:crypto';
import type { Context } from 'koa';
import type { JobAck } from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import type { JobStatusView } from '../core/status/job-status-view.ts';
import type { Clock } from '../core/time.ts';
import type { JobType } from './build-job-request.ts';

/** How long a key keeps its first request, ms: 24 h. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;
const KEY = /^[\x21-\x7e]{1,255}$/;
/** Later uses of one key after its window (each a new job) are told apart by a generation. */
const MAX_GENERATIONS = 1000;

/** What a submission with an Idempotency-Key is: a repeat to answer as before, or a new job. */
export type Admission =
  { repeat: JobAck } | { repeat?: undefined; jobId: string; requestDigest: string; done(): void };

/**
 * Idempotent submission without a store of its own (design):
 * - The job id is derived from (organisation, key) with a keyed hash (HMAC-SHA256, key derived
 *   from the sealing key), so every ingress copy derives the same id, and nobody who lacks the
 *   service's key can compute another organisation's ids.
 * - The request record carries a digest of the submission (`requestDigest`); the status view,
 *   which every copy reads from the bus and rebuilds after a restart, keeps it with the job's
 *   `createdAt`. A repeat within 24 h is answered from there: the same acknowledgement (id and
 *   createdAt) when the digest matches, 409 `idempotency_conflict` when it does not.
 * - Within one copy, requests with one key are handled one after the other.
 *
 * What is guaranteed across copies: a repeat that reaches a copy after the first request's
 * record has reached that copy's view (milliseconds on one machine, about a fetch wait on
 * Kafka) gets the original acknowledgement. Two requests with one key that reach two copies
 * closer together than that both publish: both callers get the same id (it is derived), their
 * createdAt may differ (GET and later repeats show the earliest), and the worker runs the job
 * once (the second record is a duplicate, see run-ledger.ts). If their bodies differed, both
 * were answered 200 and the first record's body is the one that runs; making that race a 409
 * would need a store that orders the two (a single writer per key), which this design avoids.
 * A sealing key rotation (a new first CREDENTIALS_KEYS entry) starts new ids: a repeat sent
 * across a rotation is a new job. A job the view has forgotten (more than its STATUS_VIEW_MAX_JOBS
 * newer jobs) is no longer recognised.
 */
export interface Idempotency {
  /** The Idempotency-Key header, checked (sent empty or too long: 400); undefined when absent. */
  keyOf(ctx: Context): string | undefined;
  admit(
    orgId: string,
    key: string,
    type: JobType,
    body: Record<string, unknown>,
  ): Promise<Admission>;
}

export function createIdempotency(deps: {
  statusView: JobStatusView;
  clock: Clock;
  /** Secret the job ids are derived with; the same in every copy. */
  secret: Buffer;
}): Idempotency {
  const idKey = createHmac('sha256', deps.secret)
    .update('media-service idempotent job ids v1')
    .digest();
  const inFlight = new Map<string, Promise<void>>();

  const lookUp = (orgId: string, key: string, digest: string): JobAck | string => {
    for (let generation = 0; generation < MAX_GENERATIONS; generation++) {
      const jobId = derivedJobId(idKey, orgId, key, generation);
      const known = deps.statusView.submission(jobId, orgId);
      if (!known) return jobId;
      const age = deps.clock.now().getTime() - Date.parse(known.createdAt);
      if (age >= IDEMPOTENCY_WINDOW_MS) continue;
      // The job's events were read before its request record (another topic): its createdAt and
      // digest are not known yet, so the answer waits for the caller's next try (as Stripe's 409
      // for a request still in progress).
      if (!known.requestSeen)
        throw new MediaError(
          'idempotency_in_progress',
          'the first request with this Idempotency-Key is still being recorded; try again in a moment',
        );
      if (known.requestDigest !== digest)
        throw new MediaError(
          'idempotency_conflict',
          'this Idempotency-Key was used in the last 24 h with a different request; use a new key for a new job',
        );
      return { id: jobId, status: 'queued', createdAt: known.createdAt };
    }
    throw new MediaError('idempotency_conflict', 'this Idempotency-Key has been used too often');
  };

  return {
    keyOf(ctx) {
      // Sent empty is not the same as not sent: a client whose key went missing must hear so.
      if (ctx.headers['idempotency-key'] === undefined) return undefined;
      const raw = ctx.get('idempotency-key');
      if (!KEY.test(raw))
        throw new MediaError(
          'invalid_request',
          'the Idempotency-Key header must be 1 to 255 visible ASCII characters',
        );
      return raw;
    },

    async admit(orgId, key, type, body) {
      const digest = requestDigest(type, body);
      const lock = `${orgId}\0${key}`;
      for (let waiting = inFlight.get(lock); waiting; waiting = inFlight.get(lock)) await waiting;
      const found = lookUp(orgId, key, digest);
      if (typeof found !== 'string') return { repeat: found };
      let release = (): void => {};
      inFlight.set(lock, new Promise<void>((resolve) => (release = resolve)));
      return {
        jobId: found,
        requestDigest: digest,
        done: () => {
          inFlight.delete(lock);
          release();
        },
      };
    },
  };
}

/** A UUID (version 8, RFC 9562: custom) from HMAC-SHA256 of the organisation, key and generation. */
export function derivedJobId(
  idKey: Buffer,
  orgId: string,
  key: string,
  generation: number,
): string {
  const bytes = createHmac('sha256', idKey)
    .update(`${orgId}\0${key}\0${generation}`)
    .digest()
    .subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** SHA-256 of the path and the body without apiKey (another key of the organisation is the same request), keys sorted. */
export function requestDigest(type: JobType, body: Record<string, unknown>): string {
  const { apiKey: _apiKey, ...rest } = body;
  return createHash('sha256')
    .update(canonicalJson({ type, body: rest }))
    .digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}
