import { randomUUID } from 'node:crypto';
import { topics, type EventBus, type Subscription } from '../bus/event-bus.ts';
import { callbackFor, type CallbackRequest } from '../callbacks/callback-request.ts';
import type { EventCodec, JobEvent } from '../events/event-codec.ts';
import type { CallbackStatus, JobRequested, JobStatus } from '../contracts/types.generated.ts';

interface Entry extends JobStatus {
  orgId: string;
  /** Kept so the ingress can redeliver the very callback the notifier sent (about 0.5 KiB). */
  finalCallback?: CallbackRequest;
}

const rank: Record<JobStatus['status'], number> = {
  queued: 0,
  processing: 1,
  succeeded: 2,
  failed: 2,
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
  let subscription: Subscription | undefined;

  const touch = (id: string, entry: Entry): void => {
    jobs.delete(id);
    jobs.set(id, entry);
    if (jobs.size > options.maxJobs) {
      const oldest = jobs.keys().next();
      if (!oldest.done) jobs.delete(oldest.value);
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

  const view: JobStatusView = {
    get(jobId, orgId) {
      const entry = jobs.get(jobId);
      if (!entry || entry.orgId !== orgId) return undefined;
      const { orgId: _org, finalCallback: _callback, ...status } = entry;
      return status;
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
        });
        return;
      }
      const known: Entry = { ...current, type, createdAt: data.submittedAt };
      if (data.attempt > (current.attempt ?? 1))
        touch(data.jobId, {
          ...known,
          status: 'queued',
          attempt: data.attempt,
          updatedAt: time,
          queuedSince,
        });
      else jobs.set(data.jobId, known);
    },

    apply(event) {
      if (event.type === 'media.callback.status') return applyCallbackStatus(event.data);
      if (event.type === 'media.callback.delivery') return;
      const data = event.data;
      const current = jobs.get(data.jobId);
      if (event.type === 'media.job.requested') return view.applyRequested(event.data, event.time);
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
            ? 'failed'
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
        topics: [topics.transcodeRequests, topics.summaryRequests, topics.jobEvents],
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
