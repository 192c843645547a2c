import { callbackFor, type CallbackRequest } from '../callbacks/callback-request.ts';
import type { JobEvent } from '../events/event-codec.ts';
import type {
  CallbackStatus,
  JobCancelRequested,
  JobRequested,
  JobStatus,
} from '../contracts/types.generated.ts';

/**
 * A job's whole state as the status view keeps it, and as one record of the status topic
 * carries it (JSON, key job id).
 */
export interface StatusEntry extends JobStatus {
  orgId: string;
  /** Kept so the ingress can redeliver the very callback the notifier sent (about 0.5 KiB). */
  finalCallback?: CallbackRequest;
  /** The earliest request record's submittedAt and digest (two ingress copies may both publish one). */
  submittedAt?: string;
  requestDigest?: string;
  /**
   * Orders the records of one job: a reader keeps the entry with the highest. The writer sets
   * it to max(previous + 1, now in µs), so a writer that took a job over after a rebalance,
   * and may not have read its predecessor's last record yet, still writes a higher one.
   */
  rev: number;
}

const rank: Record<JobStatus['status'], number> = {
  queued: 0,
  processing: 1,
  succeeded: 2,
  failed: 2,
  canceled: 2,
};

/** Statuses counted as a job still to finish (queued or processing). */
export const ACTIVE = new Set<JobStatus['status']>(['queued', 'processing']);

type Unrevised = Omit<StatusEntry, 'rev'> & { rev?: number };

/** The state after a job request (seen on the bus or just published), or undefined if unchanged. */
export function foldRequested(
  current: StatusEntry | undefined,
  data: JobRequested,
  time: string,
): Unrevised | undefined {
  const type =
    data.kind === 'transcode' || data.kind === 'stream'
      ? data.kind
      : data.summary?.format === 'gif'
        ? 'summary/gif'
        : 'summary/mp4';
  const digest = data.requestDigest === undefined ? {} : { requestDigest: data.requestDigest };
  // A retry waits from its due time; a first attempt from its submission.
  const queuedSince = data.attempt > 1 && data.notBefore ? data.notBefore : data.submittedAt;
  if (!current)
    return {
      id: data.jobId,
      orgId: data.orgId,
      type,
      status: 'queued',
      createdAt: data.submittedAt,
      updatedAt: time,
      queuedSince,
      attempt: data.attempt,
      submittedAt: data.submittedAt,
      ...digest,
    };
  if (current.orgId !== data.orgId) return undefined;
  // A duplicate of an idempotent submission (two ingress copies raced) keeps the first's time and digest.
  const first =
    current.submittedAt !== undefined && current.submittedAt <= data.submittedAt
      ? { createdAt: current.submittedAt }
      : { createdAt: data.submittedAt, submittedAt: data.submittedAt, ...digest };
  const known: Unrevised = { ...current, type, ...first };
  if (data.attempt > (current.attempt ?? 1))
    return { ...known, status: 'queued', attempt: data.attempt, updatedAt: time, queuedSince };
  if (
    current.type === type &&
    current.createdAt === known.createdAt &&
    current.submittedAt === known.submittedAt &&
    current.requestDigest === known.requestDigest
  )
    return undefined;
  return known;
}

// A cancel may be read before its job's request (another topic): it then makes the entry.
function foldCancel(
  current: StatusEntry | undefined,
  data: JobCancelRequested,
): Unrevised | undefined {
  if (current && current.orgId !== data.orgId) return undefined;
  const entry: Unrevised = current ?? {
    id: data.jobId,
    orgId: data.orgId,
    type: data.kind === 'summary' ? 'summary/mp4' : data.kind,
    status: 'queued',
    createdAt: data.requestedAt,
    updatedAt: data.requestedAt,
  };
  if (entry.cancelRequestedAt !== undefined) return undefined;
  return { ...entry, cancelRequestedAt: data.requestedAt };
}

/**
 * A retry scheduled: the job is queued again until its due time, with the attempt that will
 * run and the error of the one that failed (the retry's request record is held by the bus
 * until it is due, so it cannot say this while the job waits).
 */
function foldRetry(
  current: StatusEntry | undefined,
  event: Extract<JobEvent, { type: 'media.job.retry-scheduled' }>,
): Unrevised | undefined {
  const { data } = event;
  if (!current || current.orgId !== data.orgId) return undefined;
  const attempt = current.attempt ?? 1;
  if (data.attempt < attempt || rank[current.status] === 2) return undefined;
  if (data.attempt === attempt && current.status !== 'queued') return undefined;
  const { progressPercent: _progress, ...left } = current;
  return {
    ...left,
    status: 'queued',
    attempt: data.attempt,
    queuedSince: data.notBefore,
    error: { code: data.error.code, message: data.error.message },
    updatedAt: event.time,
  };
}

/** The state after an event of the job, or undefined when the event changes nothing. */
export function foldEvent(
  current: StatusEntry | undefined,
  event: JobEvent,
): Unrevised | undefined {
  if (event.type === 'media.callback.status') return foldCallbackStatus(current, event.data);
  if (event.type === 'media.callback.delivery') return undefined;
  if (event.type === 'media.job.requested') return foldRequested(current, event.data, event.time);
  if (event.type === 'media.job.cancel-requested') return foldCancel(current, event.data);
  if (event.type === 'media.job.retry-scheduled') return foldRetry(current, event);
  const data = event.data;
  // Anyone who can produce to the bus can name a job id: a record of another organisation
  // (a refused request failed in its name, say) never changes someone else's job.
  if (current && current.orgId !== data.orgId) return undefined;
  // Events of a job can arrive before its request (different topics); keep what is known.
  const entry: Unrevised = current ?? {
    id: data.jobId,
    orgId: data.orgId,
    type: 'transcode',
    status: 'queued',
    createdAt: event.time,
    updatedAt: event.time,
    attempt: data.attempt,
  };
  const attempt = entry.attempt ?? 1;
  if (data.attempt < attempt) return undefined;
  const status: JobStatus['status'] =
    event.type === 'media.job.succeeded'
      ? 'succeeded'
      : event.type === 'media.job.failed'
        ? event.data.error.code === 'canceled'
          ? 'canceled'
          : 'failed'
        : 'processing';
  if (data.attempt === attempt && rank[status] < rank[entry.status]) return undefined;
  const { queuedSince: _waited, ...left } = entry;
  const next: Unrevised = { ...left, status, attempt: data.attempt, updatedAt: event.time };
  if (event.type === 'media.job.progress') next.progressPercent = event.data.percent;
  if (event.type === 'media.job.succeeded') {
    next.result = event.data.result;
    next.progressPercent = 100;
  }
  if (event.type === 'media.job.failed')
    next.error = { code: event.data.error.code, message: event.data.error.message };
  // The last error stays in view while a retry runs; a success leaves none.
  if (event.type === 'media.job.succeeded') delete next.error;
  const callback = callbackFor(event);
  if (callback) {
    next.finalCallback = callback;
    if (next.callback?.webhookId !== callback.webhookId)
      next.callback = { state: 'pending', webhookId: callback.webhookId, attempts: 0 };
  }
  return next;
}

// Callback events of one job arrive in order (same key), so the newest simply wins.
function foldCallbackStatus(
  current: StatusEntry | undefined,
  data: CallbackStatus,
): Unrevised | undefined {
  if (!current || current.orgId !== data.orgId) return undefined;
  const { state, webhookId, attempts, lastStatus, lastError, nextAttemptAt } = data;
  return {
    ...current,
    callback: {
      state,
      webhookId,
      attempts,
      ...(lastStatus === undefined ? {} : { lastStatus }),
      ...(lastError === undefined ? {} : { lastError }),
      ...(nextAttemptAt === undefined ? {} : { nextAttemptAt }),
    },
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A status topic record read back, checked for the fields the view relies on (the topic is
 * internal, written by the status writer; anything else is skipped).
 */
export function readStatusRecord(key: string, text: string): StatusEntry | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const e = parsed as Partial<Record<keyof StatusEntry, unknown>>;
  const ok =
    e.id === key &&
    UUID.test(key) &&
    typeof e.orgId === 'string' &&
    typeof e.status === 'string' &&
    e.status in rank &&
    typeof e.type === 'string' &&
    typeof e.createdAt === 'string' &&
    typeof e.updatedAt === 'string' &&
    typeof e.rev === 'number';
  return ok ? (parsed as StatusEntry) : undefined;
}

/**
 * Whether state `a` of a job comes after state `b` in its life: a later attempt, a later stage of
 * the same attempt (queued, processing, ended), or the same stage written later (the higher rev).
 * Every fold moves a job forward in this order (a retry to a higher attempt), so a reader that
 * keeps the later of two states agrees with the fold even when a writer folded from a view that
 * lagged: a request record read again after a rebalance, by a copy that had not yet read the
 * job's end, writes `queued` at a higher rev than `succeeded`, and must not bring it back.
 */
export function laterThan(a: StatusEntry, b: StatusEntry): boolean {
  const attempt = (a.attempt ?? 1) - (b.attempt ?? 1);
  if (attempt !== 0) return attempt > 0;
  const stage = rank[a.status] - rank[b.status];
  if (stage !== 0) return stage > 0;
  return a.rev > b.rev;
}

/**
 * The state to keep when a job has two records, `kept` the later one (laterThan): `kept`, with
 * the facts only `dropped` knows carried over. A job's request and cancel are read from their own
 * topics, its events from another, and a partition of each may belong to a different status
 * writer: two writers can fold one job at once, each from what it has read so far, and each
 * publishes the whole state. The later state then wins, and with it the status; but the
 * submission (its time, digest and job type) and the cancel never change once known, so losing
 * them to a state folded without them would be for good (an Idempotency-Key repeat answered
 * "still being recorded" forever). Of two submissions, the earlier is the job's (as
 * foldRequested). Returns `kept` itself when `dropped` adds nothing.
 */
export function withFactsOf(kept: StatusEntry, dropped: StatusEntry): StatusEntry {
  if (kept.orgId !== dropped.orgId) return kept;
  let out = kept;
  const submitted = dropped.submittedAt;
  if (submitted !== undefined && (kept.submittedAt === undefined || submitted < kept.submittedAt)) {
    const { requestDigest: _digest, ...rest } = out;
    out = {
      ...rest,
      type: dropped.type,
      createdAt: dropped.createdAt,
      submittedAt: submitted,
      ...(dropped.requestDigest === undefined ? {} : { requestDigest: dropped.requestDigest }),
    };
    // A queued first attempt waits from its submission (a state made by a cancel has no such time).
    if (
      out.status === 'queued' &&
      out.queuedSince === undefined &&
      dropped.queuedSince !== undefined &&
      out.attempt === dropped.attempt
    )
      out.queuedSince = dropped.queuedSince;
  }
  if (kept.cancelRequestedAt === undefined && dropped.cancelRequestedAt !== undefined)
    out = { ...out, cancelRequestedAt: dropped.cancelRequestedAt };
  return out;
}
