import { topics, type BusRecord, type EventBus, type Subscription } from '../bus/event-bus.ts';
import type { CallbackRequest } from '../callbacks/callback-request.ts';
import type { EventCodec, JobEvent } from '../events/event-codec.ts';
import type { JobRequested, JobStatus } from '../contracts/types.generated.ts';
import { silentLogger, type Logger } from '../observability/logger.ts';
import {
  ACTIVE,
  foldEvent,
  foldRequested,
  readStatusRecord,
  type StatusEntry,
} from './job-status-fold.ts';
import { createJobStatusStore } from './job-status-store.ts';

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
 * - The **status writer**: one consumer group (`status-writer`) shared by the ingress copies
 *   reads the request topics, the events topic and the cancel topic once, folds each state
 *   change into the job's state (job-status-fold.ts: status, cancel, Idempotency-Key digest,
 *   queuedSince) and publishes that whole state to the compacted status topic (key job id).
 *   Progress ticks are not written. Each state change is thus written once (again only after
 *   a crash between publish and commit: the same state, harmless under compaction).
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

/** Consumer group of the status writers (one member per ingress copy). */
export const STATUS_WRITER_GROUP = 'status-writer';

export function createJobStatusView(
  deps: { bus: EventBus; codec: EventCodec; log?: Logger },
  options: JobStatusViewOptions,
): JobStatusView {
  const log = (deps.log ?? silentLogger).child({ component: 'job-status' });
  // Each job as its JSON text, parsed when read, kept compressed (job-status-store.ts: about
  // 0.2 KiB of heap a finished job with a callback, against 1.2 KiB as plain text or as parsed
  // objects), the newest-changed last.
  const jobs = createJobStatusStore();
  const read = (jobId: string): StatusEntry | undefined => {
    const text = jobs.get(jobId);
    return text === undefined ? undefined : (JSON.parse(text) as StatusEntry);
  };
  // The active (queued or processing) jobs beside the texts, and a count per organisation kept
  // on every change: the per-organisation cap reads it per request, the waiting gauge per scrape,
  // and neither should parse the texts.
  const activeIds = new Map<string, { orgId: string; kind: Kind; queued: boolean }>();
  const active = new Map<string, number>();
  const count = (orgId: string, by: number): void => {
    const n = (active.get(orgId) ?? 0) + by;
    if (n > 0) active.set(orgId, n);
    else active.delete(orgId);
  };
  const forget = (id: string): void => {
    const was = activeIds.get(id);
    if (!was) return;
    activeIds.delete(id);
    count(was.orgId, -1);
  };
  const subscriptions: Subscription[] = [];
  /** Jobs whose state this copy folded itself and has not published yet (the writer publishes them). */
  const unwritten = new Set<string>();
  /** Per job, the last status publish under way: one job's records are written in order. */
  const writing = new Map<string, Promise<void>>();

  // Every change goes through here: the newest-changed job is last, the oldest is dropped.
  const touch = (entry: StatusEntry, text = JSON.stringify(entry)): void => {
    jobs.set(entry.id, text, ACTIVE.has(entry.status));
    forget(entry.id);
    if (ACTIVE.has(entry.status)) {
      const kind = entry.type === 'transcode' || entry.type === 'stream' ? entry.type : 'summary';
      activeIds.set(entry.id, { orgId: entry.orgId, kind, queued: entry.status === 'queued' });
      count(entry.orgId, 1);
    }
    if (jobs.size > options.maxJobs) {
      const oldest = jobs.oldest();
      if (oldest !== undefined) {
        jobs.delete(oldest);
        unwritten.delete(oldest);
        forget(oldest);
      }
    }
  };

  const revise = (
    next: Omit<StatusEntry, 'rev'>,
    current: StatusEntry | undefined,
  ): StatusEntry => ({
    ...next,
    rev: Math.max((current?.rev ?? 0) + 1, Date.now() * 1000),
  });

  const applyEvent = (event: JobEvent): StatusEntry | undefined => {
    const current = read(event.data.jobId);
    const next = foldEvent(current, event);
    if (!next) return undefined;
    const entry = revise(next, current);
    unwritten.add(entry.id);
    touch(entry);
    return entry;
  };

  const applyStatusRecord = (record: BusRecord): void => {
    const held = jobs.get(record.key);
    const text = record.value.toString('utf8');
    // The state this copy holds already, most often its own write read back: nothing to parse.
    if (held === text) return;
    const entry = readStatusRecord(record.key, text);
    if (!entry) return log.warn('job_status.record_skipped', { key: record.key });
    const current = held === undefined ? undefined : (JSON.parse(held) as StatusEntry);
    if (current && current.rev >= entry.rev) return;
    unwritten.delete(entry.id);
    // Progress ticks are not in the status topic; keep the newest one seen of the same run.
    if (
      current?.progressPercent !== undefined &&
      entry.status === 'processing' &&
      current.status === 'processing' &&
      current.attempt === entry.attempt &&
      current.progressPercent > (entry.progressPercent ?? 0)
    )
      touch({ ...entry, progressPercent: current.progressPercent });
    else touch(entry, text);
  };

  const publishStatus = (jobId: string): Promise<void> => {
    const previous = writing.get(jobId) ?? Promise.resolve();
    const done = previous.then(async () => {
      // The newest state when its turn comes, so a later publish never carries an older state.
      const text = jobs.get(jobId);
      if (text === undefined || !unwritten.has(jobId)) return;
      unwritten.delete(jobId);
      try {
        await deps.bus.publish([{ topic: topics.jobStatus, key: jobId, value: Buffer.from(text) }]);
      } catch (error) {
        // Unless a newer state came meanwhile, this one is still to be written.
        if (jobs.get(jobId) === text) unwritten.add(jobId);
        throw error;
      }
    });
    const settled = done.catch(() => undefined);
    writing.set(jobId, settled);
    void settled.then(() => {
      if (writing.get(jobId) === settled) writing.delete(jobId);
    });
    return done;
  };

  // A rejection hands the record back, so a state not written is tried again.
  const writeStateChange = async (record: BusRecord): Promise<void> => {
    const decoded = deps.codec.decode(record);
    if (!decoded.ok) return;
    const event = decoded.event;
    if (event.type === 'media.job.progress' || event.type === 'media.callback.delivery') return;
    applyEvent(event);
    // Also when the event changed nothing here: the state may have been folded before and not
    // written (a request this copy applied at submission, a publish that failed).
    await publishStatus(event.data.jobId);
  };

  const followProgress = async (record: BusRecord): Promise<void> => {
    const type = record.headers['ce-type'] ?? record.headers['ce_type'];
    if (type !== undefined && type !== 'media.job.progress') return;
    const decoded = deps.codec.decode(record);
    if (decoded.ok && decoded.event.type === 'media.job.progress') applyEvent(decoded.event);
  };

  const view: JobStatusView = {
    get(jobId, orgId) {
      const entry = read(jobId);
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
    },

    submission(jobId, orgId) {
      const entry = read(jobId);
      if (!entry || entry.orgId !== orgId) return undefined;
      const { createdAt, status, requestDigest, submittedAt } = entry;
      return {
        createdAt,
        status,
        requestSeen: submittedAt !== undefined,
        ...(requestDigest === undefined ? {} : { requestDigest }),
      };
    },

    activeJobs(orgId) {
      return active.get(orgId) ?? 0;
    },

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

    finalCallback(jobId, orgId) {
      const entry = read(jobId);
      return entry?.orgId === orgId ? entry.finalCallback : undefined;
    },

    applyRequested(data, time) {
      const current = read(data.jobId);
      const next = foldRequested(current, data, time);
      if (!next) return;
      const entry = revise(next, current);
      unwritten.add(entry.id);
      touch(entry);
    },

    apply(event) {
      applyEvent(event);
    },

    async start() {
      const started = performance.now();
      subscriptions.push(
        await deps.bus.tail({
          topics: [
            { topic: topics.jobStatus, last: options.maxJobs },
            { topic: topics.jobEvents, last: 0 },
          ],
          readyWithinMs: options.readyWithinMs ?? 25_000,
          handler: async (record) =>
            record.topic === topics.jobStatus ? applyStatusRecord(record) : followProgress(record),
        }),
      );
      log.info('job_status.loaded', {
        jobs: jobs.size,
        durationMs: Math.round(performance.now() - started),
      });
      if (options.writer === false) return;
      subscriptions.push(
        await deps.bus.subscribe({
          group: options.writerGroup ?? STATUS_WRITER_GROUP,
          topics: [
            topics.transcodeRequests,
            topics.summaryRequests,
            topics.streamRequests,
            topics.jobEvents,
            topics.jobCancels,
          ],
          // Once, on the first start of all: the history written before the status topic existed.
          fromBeginning: true,
          concurrency: 8,
          handler: writeStateChange,
        }),
      );
    },

    async close() {
      await Promise.all(subscriptions.splice(0).map((s) => s.close(0)));
    },
  };
  return view;
}
