import { topics, type BusRecord, type EventBus, type Subscription } from '../bus/event-bus.ts';
import type { CallbackRequest } from '../callbacks/callback-request.ts';
import type { EventCodec, JobEvent } from '../events/event-codec.ts';
import type { JobRequested, JobStatus } from '../contracts/types.generated.ts';
import { silentLogger, type Logger } from '../observability/logger.ts';
import {
  ACTIVE,
  foldEvent,
  foldRequested,
  laterThan,
  readStatusRecord,
  withFactsOf,
  type StatusEntry,
} from './job-status-fold.ts';
import { createJobStatusStore } from './job-status-store.ts';
import { createJobStatusWriter } from './job-status-writer.ts';

/** What an idempotent repeat of a submission is checked against (see idempotency.ts). */
export interface Submission {
  createdAt: string;
  status: JobStatus['status'];
  /** Absent when the job was not submitted with an Idempotency-Key (or before the request was seen). */
  requestDigest?: string;
  /** False while only the job's events or cancel have been read, not its request (another topic). */
  requestSeen: boolean;
}

type Kind = 'transcode' | 'summary' | 'stream';

/**
 * Job status read from the bus itself (no database), in two parts:
 *
 * - The **status writer** (job-status-writer.ts): one consumer group shared by the ingress
 *   copies folds each state change into the job's state (job-status-fold.ts: status, cancel,
 *   Idempotency-Key digest, queuedSince) and publishes that whole state to the compacted status
 *   topic (key job id). Progress ticks are not written.
 * - The **view**: every copy reads the newest `maxJobs` records of the status topic into a
 *   bounded store (compressed, about 0.2 KiB a finished job: job-status-store.ts) and follows
 *   it, plus the progress ticks of the events topic from now on. Start-up reads about `maxJobs`
 *   records however long the history is. Older jobs are forgotten and answer 404. The
 *   active-job counts and the waiting gauge are kept on every change of the store (records
 *   read back, local folds, evictions alike).
 */
export interface JobStatusView {
  /** The job as its organisation may see it; undefined when unknown or someone else's. */
  get(jobId: string, orgId: string): JobStatus | undefined;
  /** The job's final callback as it was sent, once the job has ended with one (same scoping as `get`). */
  finalCallback(jobId: string, orgId: string): CallbackRequest | undefined;
  /** The job's acknowledgement data for an idempotent repeat (same scoping as `get`). */
  submission(jobId: string, orgId: string): Submission | undefined;
  /** Jobs of the organisation that are queued or processing, among those the view holds. */
  activeJobs(orgId: string): number;
  /** Queued jobs per organisation and job kind (the `media_jobs_waiting` gauge). */
  waiting(): Map<string, { orgId: string; kind: Kind; count: number }>;
  /** Applies an event to this copy's view (the writer also publishes what changed). */
  apply(event: JobEvent): void;
  /** Applies a job request: seen on the bus, or just published by this ingress (`time`: when). */
  applyRequested(job: JobRequested, time: string): void;
  /** Loads the view (resolves once caught up, or after `readyWithinMs`), then starts the writer. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface JobStatusViewOptions {
  /** Jobs kept in memory; also about how many status records a start reads. */
  maxJobs: number;
  /** Longest wait in start() for the view to catch up before serving anyway, ms (default 25000). */
  readyWithinMs?: number;
  /** Runs the status writer in this process (default true). */
  writer?: boolean;
  /** Consumer group of the status writers (default `status-writer`). */
  writerGroup?: string;
}

export function createJobStatusView(
  deps: { bus: EventBus; codec: EventCodec; log?: Logger },
  options: JobStatusViewOptions,
): JobStatusView {
  const log = (deps.log ?? silentLogger).child({ component: 'job-status' });
  const held = holdJobs(options.maxJobs);
  const applyEvent = (event: JobEvent): void => {
    fold(held, event.data.jobId, (current) => foldEvent(current, event));
  };
  const writer = createJobStatusWriter(deps, {
    text: held.text,
    apply: applyEvent,
    unwritten: held.unwritten,
  });
  const subscriptions: Subscription[] = [];
  return {
    get: (jobId, orgId) => statusOf(held.read(jobId), orgId),
    submission: (jobId, orgId) => submissionOf(held.read(jobId), orgId),
    finalCallback(jobId, orgId) {
      const entry = held.read(jobId);
      return entry?.orgId === orgId ? entry.finalCallback : undefined;
    },
    activeJobs: held.activeJobs,
    waiting: held.waiting,
    applyRequested(data, time) {
      fold(held, data.jobId, (current) => foldRequested(current, data, time));
    },
    apply: applyEvent,
    async start() {
      // A state this copy completed from a record it read is published, if this copy writes.
      const writeCarried =
        options.writer === false
          ? undefined
          : (jobId: string): void => {
              writer.publish(jobId).catch((error: unknown) => {
                // Still unwritten: the job's next state change publishes it.
                log.warn('job_status.publish_failed', { jobId, error });
              });
            };
      subscriptions.push(await loadView(deps, held, options, log, applyEvent, writeCarried));
      if (options.writer === false) return;
      subscriptions.push(await writer.subscribe(options.writerGroup));
    },
    async close() {
      await Promise.all(subscriptions.splice(0).map((s) => s.close(0)));
    },
  };
}

/** The jobs this copy holds, with the active-job counts kept beside them. */
interface HeldJobs {
  read: (jobId: string) => StatusEntry | undefined;
  /** The job's state as its JSON text (what the status topic carries). */
  text: (jobId: string) => string | undefined;
  readonly size: number;
  /** Every change goes through here: the newest-changed job is last, the oldest is dropped. */
  touch(entry: StatusEntry, text?: string): void;
  activeJobs: (orgId: string) => number;
  waiting: () => Map<string, { orgId: string; kind: Kind; count: number }>;
  /** Jobs whose state this copy folded itself and has not published yet (the writer publishes them). */
  readonly unwritten: Set<string>;
}

function holdJobs(maxJobs: number): HeldJobs {
  // Each job as its JSON text, parsed when read, kept compressed (job-status-store.ts: about
  // 0.2 KiB of heap a finished job with a callback, against 1.2 KiB as plain text or as parsed
  // objects), the newest-changed last.
  const jobs = createJobStatusStore();
  const active = countActive();
  const unwritten = new Set<string>();
  return {
    read(jobId) {
      const text = jobs.get(jobId);
      return text === undefined ? undefined : (JSON.parse(text) as StatusEntry);
    },
    text: (jobId) => jobs.get(jobId),
    get size() {
      return jobs.size;
    },
    touch(entry, text = JSON.stringify(entry)) {
      jobs.set(entry.id, text, ACTIVE.has(entry.status));
      active.update(entry);
      if (jobs.size > maxJobs) {
        const oldest = jobs.oldest();
        if (oldest !== undefined) {
          jobs.delete(oldest);
          unwritten.delete(oldest);
          active.forget(oldest);
        }
      }
    },
    activeJobs: active.count,
    waiting: active.waiting,
    unwritten,
  };
}

/**
 * The active (queued or processing) jobs, and a count per organisation kept on every change: the
 * per-organisation cap reads it per request, the waiting gauge per scrape, and neither should
 * parse the texts.
 */
function countActive(): {
  update(entry: StatusEntry): void;
  forget(jobId: string): void;
  count: (orgId: string) => number;
  waiting: () => Map<string, { orgId: string; kind: Kind; count: number }>;
} {
  const activeIds = new Map<string, { orgId: string; kind: Kind; queued: boolean }>();
  const perOrg = new Map<string, number>();
  const add = (orgId: string, by: number): void => {
    const n = (perOrg.get(orgId) ?? 0) + by;
    if (n > 0) perOrg.set(orgId, n);
    else perOrg.delete(orgId);
  };
  const forget = (id: string): void => {
    const was = activeIds.get(id);
    if (!was) return;
    activeIds.delete(id);
    add(was.orgId, -1);
  };
  return {
    update(entry) {
      forget(entry.id);
      if (!ACTIVE.has(entry.status)) return;
      const kind = entry.type === 'transcode' || entry.type === 'stream' ? entry.type : 'summary';
      activeIds.set(entry.id, { orgId: entry.orgId, kind, queued: entry.status === 'queued' });
      add(entry.orgId, 1);
    },
    forget,
    count: (orgId) => perOrg.get(orgId) ?? 0,
    waiting() {
      const counts = new Map<string, { orgId: string; kind: Kind; count: number }>();
      for (const job of activeIds.values()) {
        if (!job.queued) continue;
        const id = `${job.orgId}\u0000${job.kind}`;
        const c = counts.get(id) ?? { orgId: job.orgId, kind: job.kind, count: 0 };
        c.count += 1;
        counts.set(id, c);
      }
      return counts;
    },
  };
}

/** Folds a change into the held job: a new revision, marked unwritten (the writer publishes it). */
function fold(
  held: HeldJobs,
  jobId: string,
  change: (current: StatusEntry | undefined) => Omit<StatusEntry, 'rev'> | undefined,
): void {
  const current = held.read(jobId);
  const next = change(current);
  if (!next) return;
  const entry: StatusEntry = {
    ...next,
    rev: Math.max((current?.rev ?? 0) + 1, Date.now() * 1000),
  };
  held.unwritten.add(entry.id);
  held.touch(entry);
}

/** Reads the newest `maxJobs` status records and follows them, and the progress ticks from now on. */
async function loadView(
  deps: { bus: EventBus; codec: EventCodec },
  held: HeldJobs,
  options: JobStatusViewOptions,
  log: Logger,
  applyEvent: (event: JobEvent) => void,
  writeCarried: ((jobId: string) => void) | undefined,
): Promise<Subscription> {
  const started = performance.now();
  const followProgress = (record: BusRecord): void => {
    const type = record.headers['ce-type'] ?? record.headers['ce_type'];
    if (type !== undefined && type !== 'media.job.progress') return;
    const decoded = deps.codec.decode(record);
    if (decoded.ok && decoded.event.type === 'media.job.progress') applyEvent(decoded.event);
  };
  const subscription = await deps.bus.tail({
    topics: [
      { topic: topics.jobStatus, last: options.maxJobs },
      { topic: topics.jobEvents, last: 0 },
    ],
    readyWithinMs: options.readyWithinMs ?? 25_000,
    handler: async (record) => {
      if (record.topic !== topics.jobStatus) return followProgress(record);
      if (readStatus(held, record, log)) writeCarried?.(record.key);
    },
  });
  log.info('job_status.loaded', {
    jobs: held.size,
    durationMs: Math.round(performance.now() - started),
  });
  return subscription;
}

/**
 * A record of the status topic: taken unless this copy holds that state or a later one
 * (laterThan), and either way with the facts of the other carried over (withFactsOf). True when
 * the record read lacks what this copy now holds (a fact, or a later state it wrote over at a
 * higher rev): the held state is marked unwritten, for a writing copy to publish at a higher rev
 * still, so every reader, a fresh one too, ends with it.
 */
function readStatus(held: HeldJobs, record: BusRecord, log: Logger): boolean {
  const heldText = held.text(record.key);
  const text = record.value.toString('utf8');
  // The state this copy holds already, most often its own write read back: nothing to parse.
  if (heldText === text) return false;
  const entry = readStatusRecord(record.key, text);
  if (!entry) {
    log.warn('job_status.record_skipped', { key: record.key });
    return false;
  }
  const current = heldText === undefined ? undefined : (JSON.parse(heldText) as StatusEntry);
  const rev = Math.max(current?.rev ?? 0, entry.rev) + 1;
  if (current && !laterThan(entry, current)) {
    const completed = withFactsOf(current, entry);
    if (completed === current && entry.rev <= current.rev) return false;
    return carry(held, { ...completed, rev });
  }
  const completed = current ? withFactsOf(entry, current) : entry;
  held.unwritten.delete(entry.id);
  // Progress ticks are not in the status topic; keep the newest one seen of the same run.
  const next =
    current?.progressPercent !== undefined &&
    entry.status === 'processing' &&
    current.status === 'processing' &&
    current.attempt === entry.attempt &&
    current.progressPercent > (entry.progressPercent ?? 0)
      ? { ...completed, progressPercent: current.progressPercent }
      : completed;
  // A state held at a higher rev is not republished here: it may be this copy's own progress
  // fold, never written. The copy that holds the later state republishes it (above).
  if (completed !== entry) return carry(held, { ...next, rev });
  if (next === entry) held.touch(entry, text);
  else held.touch(next);
  return false;
}

/** Holds a state the status topic's newest record lacks, marked unwritten (as a local fold is). */
function carry(held: HeldJobs, entry: StatusEntry): true {
  held.touch(entry);
  held.unwritten.add(entry.id);
  return true;
}

/** The job as its organisation may see it. */
function statusOf(entry: StatusEntry | undefined, orgId: string): JobStatus | undefined {
  if (!entry || entry.orgId !== orgId) return undefined;
  const {
    orgId: _org,
    finalCallback: _callback,
    rev: _rev,
    submittedAt: _submitted,
    requestDigest: _digest,
    ...status
  } = entry;
  return status;
}

function submissionOf(entry: StatusEntry | undefined, orgId: string): Submission | undefined {
  if (!entry || entry.orgId !== orgId) return undefined;
  const { createdAt, status, requestDigest, submittedAt } = entry;
  return {
    createdAt,
    status,
    requestSeen: submittedAt !== undefined,
    ...(requestDigest === undefined ? {} : { requestDigest }),
  };
}
