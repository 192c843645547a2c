import { topics, type EventBus } from '../bus/event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import { readStatusRecord } from './job-status-fold.ts';

/**
 * The job outcomes a worker or notifier process knows of, read from the compacted status topic
 * (`media.jobs.status.v1`, each job's whole state, written by the status writer) and noted by the
 * process itself. It is what makes "done once" hold beyond one process's memory: a request
 * record of an attempt that has ended (a duplicate published by a retried submission, or the
 * record again after its commit was lost) is not run again by whichever worker takes it, after a
 * restart or a rebalance too; a terminal event read twice does not make a second callback.
 *
 * What it cannot see: an outcome the status writer has not written back yet (it follows the
 * events topic, about a fetch wait behind), and jobs older than the newest READ_AT_START records
 * at the process's start. Within one process the outcomes it published itself, and the
 * callbacks it scheduled, are known at once (`end`, `claimCallback`).
 */
export interface JobOutcomes {
  /** True when the attempt has ended: a terminal status at it, or a later attempt exists. */
  ended(jobId: string, attempt: number): boolean;
  /** Notes an attempt whose outcome this process published. */
  end(jobId: string, attempt: number): void;
  /**
   * Claims the callback of a terminal event (`webhookId`, its event id): false when it was
   * claimed before in this process, or when the status shows it already tried or delivered.
   */
  claimCallback(jobId: string, webhookId: string): boolean;
  /** Gives a claim back (its delivery record could not be published: the event comes again). */
  releaseCallback(jobId: string, webhookId: string): void;
  /**
   * True when this process handled the callback delivery record `eventId` (an attempt made and
   * settled). Delivery records carry no stable id across processes (a manual redelivery is a
   * new record of attempt 1, with the same webhook-id), so this is the process's own memory.
   */
  deliveryHandled(jobId: string, eventId: string): boolean;
  /** Notes a callback delivery record this process handled. */
  noteDelivery(jobId: string, eventId: string): void;
  close(): Promise<void>;
}

interface Known {
  attempt: number;
  ended: boolean;
  /** Webhook ids of the job's callbacks scheduled (by this process) or tried (status). */
  callbacks: Set<string>;
  /** Event ids of the job's callback delivery records this process handled. */
  deliveries?: Set<string>;
}

/** Jobs remembered (about 200 bytes each); the least recently changed are forgotten first. */
const MAX_REMEMBERED = 100_000;

/**
 * How many status records a start reads: one per job, newest first (the topic is compacted).
 * Duplicates come within minutes of their original; 20,000 jobs back is hours at most rates,
 * at a few tens of MB read per start.
 */
export const READ_AT_START = 20_000;

/** How long a start waits for the old records before taking work (the reading goes on). */
const READY_WITHIN_MS = 15_000;

export async function startJobOutcomes(deps: { bus: EventBus; log: Logger }): Promise<JobOutcomes> {
  const jobs = new Map<string, Known>();

  const known = (jobId: string): Known => {
    let entry = jobs.get(jobId);
    if (entry) jobs.delete(jobId); // the newest last, so the oldest is forgotten first
    entry ??= { attempt: 0, ended: false, callbacks: new Set() };
    jobs.set(jobId, entry);
    if (jobs.size > MAX_REMEMBERED) {
      const oldest = jobs.keys().next();
      if (!oldest.done) jobs.delete(oldest.value);
    }
    return entry;
  };

  const note = (jobId: string, attempt: number, ended: boolean): void => {
    const entry = known(jobId);
    if (attempt > entry.attempt) Object.assign(entry, { attempt, ended });
    else if (attempt === entry.attempt) entry.ended ||= ended;
  };

  const subscription = await deps.bus.tail({
    topics: [{ topic: topics.jobStatus, last: READ_AT_START }],
    reader: 'outcomes',
    readyWithinMs: READY_WITHIN_MS,
    handler: async (record) => {
      const entry = readStatusRecord(record.key, record.value.toString('utf8'));
      if (!entry) return;
      const attempt = entry.attempt ?? 1;
      note(entry.id, attempt, entry.status !== 'queued' && entry.status !== 'processing');
      const callback = entry.callback;
      if (callback && (callback.attempts > 0 || callback.state !== 'pending'))
        known(entry.id).callbacks.add(callback.webhookId);
    },
  });

  return {
    ended(jobId, attempt) {
      const entry = jobs.get(jobId);
      if (!entry) return false;
      return entry.attempt > attempt || (entry.attempt === attempt && entry.ended);
    },
    end: (jobId, attempt) => note(jobId, attempt, true),
    claimCallback(jobId, webhookId) {
      const { callbacks } = known(jobId);
      if (callbacks.has(webhookId)) return false;
      callbacks.add(webhookId);
      return true;
    },
    releaseCallback(jobId, webhookId) {
      jobs.get(jobId)?.callbacks.delete(webhookId);
    },
    deliveryHandled: (jobId, eventId) => jobs.get(jobId)?.deliveries?.has(eventId) === true,
    noteDelivery(jobId, eventId) {
      (known(jobId).deliveries ??= new Set()).add(eventId);
    },
    close: () => subscription.close(0),
  };
}
