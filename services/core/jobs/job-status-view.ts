import { randomUUID } from 'node:crypto';
import { topics, type EventBus, type Subscription } from '../bus/event-bus.ts';
import { callbackFor, type CallbackRequest } from '../callbacks/callback-request.ts';
import type { EventCodec, JobEvent } from '../events/event-codec.ts';
import type {
  CallbackStatus,
  JobCancelRequested,
  JobRequested,
  JobStatus,
} from '../contracts/types.generated.ts';

interface Entry extends JobStatus {
  orgId: string;
  /** Kept so the ingress can redeliver the very callback the notifier sent (about 0.5 KiB). */
  finalCallback?: CallbackRequest;
  /** The earliest request record's submittedAt and digest (two ingress copies may both publish one). */
  submittedAt?: string;
  requestDigest?: string;
}

/** What an idempotent repeat of a submission is checked against (see idempotency.ts). */
export interface Submission {
  createdAt: string;
  status: JobStatus['status'];
  /** Absent when the job was not submitted with an Idempotency-Key (or before the request was seen). */
  requestDigest?: string;
  /** False while only the job's events or cancel have been read, not its request (another topic). */
  requestSeen: boolean;
}

const ACTIVE = new Set<JobStatus['status']>(['queued', 'processing']);

const rank: Record<JobStatus['status'], number> = {
  queued: 0,
  processing: 1,
  succeeded: 2,
  failed: 2,
  canceled: 2,
};

/**
 * Job status read from the bus itself (no database): every ingress copy reads the request
 * topics and the events topic from the beginning and keeps the newest `maxJobs` jobs in
 * memory (about 1 KiB each). Older jobs are forgotten and answer 404.
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
  /** Applies an event seen on the bus. */
  apply(event: JobEvent): void;
  /** Applies a job request: seen on the bus, or just published by this ingress (`time`: when). */
  applyRequested(job: JobRequested, time: string): void;
  /** Queued jobs per organisation and job kind (the `media_jobs_waiting` gauge). */
  waiting(): Map<string, { orgId: string; kind: 'transcode' | 'summary'; count: number }>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createJobStatusView(
  deps: { bus: EventBus; codec: EventCodec },
  options: { maxJobs: number },
): JobStatusView {
  const jobs = new Map<string, Entry>();
  // Counted on every change rather than by a scan: the per-organisation cap reads it per request.
  const active = new Map<string, number>();
  let subscription: Subscription | undefined;

  const count = (entry: Entry | undefined, by: number): void => {
    if (!entry || !ACTIVE.has(entry.status)) return;
    const n = (active.get(entry.orgId) ?? 0) + by;
    if (n > 0) active.set(entry.orgId, n);
    else active.delete(entry.orgId);
  };
  const put = (id: string, entry: Entry, refresh: boolean): void => {
    count(jobs.get(id), -1);
    if (refresh) jobs.delete(id);
    jobs.set(id, entry);
    count(entry, 1);
  };
  const touch = (id: string, entry: Entry): void => {
    put(id, entry, true);
    if (jobs.size > options.maxJobs) {
      const oldest = jobs.keys().next();
      if (!oldest.done) {
        count(jobs.get(oldest.value), -1);
        jobs.delete(oldest.value);
      }
    }
  };

  // Callback events of one job arrive in order (same key), so the newest simply wins.
  const applyCallbackStatus = (data: CallbackStatus): void => {
    const entry = jobs.get(data.jobId);
    if (!entry || entry.orgId !== data.orgId) return;
    const { state, webhookId, attempts, lastStatus, lastError, nextAttemptAt } = data;
    entry.callback = {
      state,
      webhookId,
      attempts,
      ...(lastStatus === undefined ? {} : { lastStatus }),
      ...(lastError === undefined ? {} : { lastError }),
      ...(nextAttemptAt === undefined ? {} : { nextAttemptAt }),
    };
  };

  // A cancel may be read before its job's request (another topic): it then makes the entry.
  const applyCancel = (data: JobCancelRequested): void => {
    const current = jobs.get(data.jobId);
    if (current && current.orgId !== data.orgId) return;
    const entry: Entry = current ?? {
      id: data.jobId,
      orgId: data.orgId,
      type: data.kind === 'transcode' ? 'transcode' : 'summary/mp4',
      status: 'queued',
      createdAt: data.requestedAt,
      updatedAt: data.requestedAt,
    };
    if (entry.cancelRequestedAt !== undefined) return;
    put(data.jobId, { ...entry, cancelRequestedAt: data.requestedAt }, current === undefined);
  };

  const view: JobStatusView = {
    get(jobId, orgId) {
      const entry = jobs.get(jobId);
      if (!entry || entry.orgId !== orgId) return undefined;
      const {
        orgId: _org,
        finalCallback: _callback,
        submittedAt: _submitted,
        requestDigest: _digest,
        ...status
      } = entry;
      return status;
    },

    submission(jobId, orgId) {
      const entry = jobs.get(jobId);
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

    finalCallback(jobId, orgId) {
      const entry = jobs.get(jobId);
      return entry?.orgId === orgId ? entry.finalCallback : undefined;
    },

    applyRequested(data, time) {
      const current = jobs.get(data.jobId);
      const type =
        data.kind === 'transcode'
          ? 'transcode'
          : data.summary?.format === 'gif'
            ? 'summary/gif'
            : 'summary/mp4';
      const digest = data.requestDigest === undefined ? {} : { requestDigest: data.requestDigest };
      // A retry waits from its due time; a first attempt from its submission.
      const queuedSince = data.attempt > 1 && data.notBefore ? data.notBefore : data.submittedAt;
      if (!current) {
        touch(data.jobId, {
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
        });
        return;
      }
      if (current.orgId !== data.orgId) return;
      // A duplicate of an idempotent submission (two ingress copies raced) keeps the first's time and digest.
      const first =
        current.submittedAt !== undefined && current.submittedAt <= data.submittedAt
          ? { createdAt: current.submittedAt }
          : { createdAt: data.submittedAt, submittedAt: data.submittedAt, ...digest };
      const known: Entry = { ...current, type, ...first };
      if (data.attempt > (current.attempt ?? 1))
        touch(data.jobId, {
          ...known,
          status: 'queued',
          attempt: data.attempt,
          updatedAt: time,
          queuedSince,
        });
      else put(data.jobId, known, false);
    },

    apply(event) {
      if (event.type === 'media.callback.status') return applyCallbackStatus(event.data);
      if (event.type === 'media.callback.delivery') return;
      if (event.type === 'media.job.requested') return view.applyRequested(event.data, event.time);
      if (event.type === 'media.job.cancel-requested') return applyCancel(event.data);
      const data = event.data;
      const current = jobs.get(data.jobId);
      // Anyone who can produce to the bus can name a job id: a record of another organisation
      // (a refused request failed in its name, say) never changes someone else's job.
      if (current && current.orgId !== data.orgId) return;
      // Events of a job can arrive before its request (different topics); keep what is known.
      const entry: Entry = current ?? {
        id: data.jobId,
        orgId: data.orgId,
        type: 'transcode',
        status: 'queued',
        createdAt: event.time,
        updatedAt: event.time,
        attempt: data.attempt,
      };
      const attempt = entry.attempt ?? 1;
      if (data.attempt < attempt) return;
      const status: JobStatus['status'] =
        event.type === 'media.job.succeeded'
          ? 'succeeded'
          : event.type === 'media.job.failed'
            ? event.data.error.code === 'canceled'
              ? 'canceled'
              : 'failed'
            : 'processing';
      if (data.attempt === attempt && rank[status] < rank[entry.status]) return;
      const { queuedSince: _waited, ...left } = entry;
      const next: Entry = { ...left, status, attempt: data.attempt, updatedAt: event.time };
      if (event.type === 'media.job.progress') next.progressPercent = event.data.percent;
      if (event.type === 'media.job.succeeded') {
        next.result = event.data.result;
        next.progressPercent = 100;
      }
      if (event.type === 'media.job.failed')
        next.error = { code: event.data.error.code, message: event.data.error.message };
      const callback = callbackFor(event);
      if (callback) {
        next.finalCallback = callback;
        if (next.callback?.webhookId !== callback.webhookId)
          next.callback = { state: 'pending', webhookId: callback.webhookId, attempts: 0 };
      }
      touch(data.jobId, next);
    },

    waiting() {
      const counts = new Map<
        string,
        { orgId: string; kind: 'transcode' | 'summary'; count: number }
      >();
      for (const entry of jobs.values()) {
        if (entry.status !== 'queued') continue;
        const kind = entry.type === 'transcode' ? 'transcode' : 'summary';
        const id = `${entry.orgId}\u0000${kind}`;
        const c = counts.get(id) ?? { orgId: entry.orgId, kind, count: 0 };
        c.count += 1;
        counts.set(id, c);
      }
      return counts;
    },

    async start() {
      subscription = await deps.bus.subscribe({
        group: `ingress-status-${randomUUID()}`,
        topics: [
          topics.transcodeRequests,
          topics.summaryRequests,
          topics.jobEvents,
          topics.jobCancels,
        ],
        fromBeginning: true,
        concurrency: 1,
        handler: async (record) => {
          const decoded = deps.codec.decode(record);
          if (decoded.ok) view.apply(decoded.event);
        },
      });
    },

    async close() {
      await subscription?.close(0);
    },
  };
  return view;
}
