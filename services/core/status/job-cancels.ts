import { topics, type EventBus, type OutgoingRecord } from '../bus/event-bus.ts';
import type { JobCancelRequested } from '../contracts/types.generated.ts';
import type { EventCodec } from '../events/event-codec.ts';
import type { Logger } from '../observability/logger.ts';

/**
 * The cancels a worker process knows of. Every worker process reads every cancel, because a
 * cancel must reach whichever process runs the job, and a process that takes the job's request
 * later must still see it. Cancels travel on a topic of their own rather than behind the request
 * on the job's topic: records of one job are handled in order there, so a cancel queued behind
 * its running job would only arrive once the job was done.
 *
 * They are read through `EventBus.tail` (the broadcast read the status view uses): nothing is
 * committed and, on Kafka, every worker joins the one group `<prefix>media-tail-cancels` instead
 * of a group of its own per start, which piled up on the broker (and in the embedded bus's
 * groups table). A start reads the newest READ_AT_START cancels first, then every new one, and
 * waits up to READY_WITHIN_MS for the old ones before the worker takes jobs.
 *
 * What is guaranteed: a cancel read before a worker takes the job's request ends the job
 * `canceled` without running it; one read while the job runs kills its ffmpeg (the job's
 * AbortSignal) and ends it `canceled`; one read after the outcome was published changes nothing
 * (the job keeps its outcome). If reading the old cancels takes longer than READY_WITHIN_MS, a
 * job may start before its cancel is read; it is stopped as soon as the cancel is.
 */
export interface JobCancels {
  /** True when a cancel of this job by this organisation has been read. */
  isCanceled(jobId: string, orgId: string): boolean;
  /** When the newest cancel of this job by this organisation was asked for (ISO 8601), if any. */
  canceledAt(jobId: string, orgId: string): string | undefined;
  /** Calls `stop` when a cancel of the job arrives (at once if one is known); returns the unwatch. */
  watch(jobId: string, orgId: string, stop: () => void): () => void;
  close(): Promise<void>;
}

/** Cancels remembered per process (about 100 bytes each); older ones are forgotten first. */
const MAX_REMEMBERED = 100_000;

/**
 * How far back a starting worker reads: a cancel matters until its job ends, so the newest
 * cancels must cover every job still queued or running when a worker starts. As many as the
 * process remembers (reading further back would only be forgotten again): a worker started now
 * misses a cancel only if more than 100,000 cancels were published after it while its job stayed
 * queued. Cancels are small (a few hundred bytes a record), so even a full read at start is some
 * tens of MB (not measured at that size); a topic with fewer cancels is read whole.
 */
export const READ_AT_START = MAX_REMEMBERED;

/** How long a start waits for the old cancels before taking jobs (then the reading goes on). */
const READY_WITHIN_MS = 15_000;

export async function startJobCancels(deps: {
  bus: EventBus;
  codec: EventCodec;
  log: Logger;
}): Promise<JobCancels> {
  const canceled = new Map<string, { orgId: string; requestedAt: string }>();
  const watchers = new Map<string, { orgId: string; stop: () => void }>();

  const remember = (data: JobCancelRequested): void => {
    canceled.delete(data.jobId); // the newest last, so the oldest is forgotten first
    canceled.set(data.jobId, { orgId: data.orgId, requestedAt: data.requestedAt });
    if (canceled.size > MAX_REMEMBERED) {
      const oldest = canceled.keys().next();
      if (!oldest.done) canceled.delete(oldest.value);
    }
    const watcher = watchers.get(data.jobId);
    if (watcher?.orgId === data.orgId) watcher.stop();
  };

  const subscription = await deps.bus.tail({
    topics: [{ topic: topics.jobCancels, last: READ_AT_START }],
    reader: 'cancels',
    readyWithinMs: READY_WITHIN_MS,
    handler: async (record) => {
      const decoded = deps.codec.decode(record);
      if (decoded.ok && decoded.event.type === 'media.job.cancel-requested')
        remember(decoded.event.data);
      else deps.log.warn('job.cancel_unreadable', { reason: decoded.ok ? 'type' : decoded.reason });
    },
  });

  const isCanceled = (jobId: string, orgId: string): boolean =>
    canceled.get(jobId)?.orgId === orgId;
  return {
    isCanceled,
    canceledAt(jobId, orgId) {
      const known = canceled.get(jobId);
      return known?.orgId === orgId ? known.requestedAt : undefined;
    },
    watch(jobId, orgId, stop) {
      const watcher = { orgId, stop };
      watchers.set(jobId, watcher);
      if (isCanceled(jobId, orgId)) stop();
      return () => {
        if (watchers.get(jobId) === watcher) watchers.delete(jobId);
      };
    },
    close: () => subscription.close(0),
  };
}

/** The record that asks every worker to cancel a job (key job id). */
export function cancelRecord(codec: EventCodec, data: JobCancelRequested): OutgoingRecord {
  return codec.encode(topics.jobCancels, 'media.job.cancel-requested', data);
}
