import { topics, type BusRecord, type EventBus } from '../bus/event-bus.ts';
import { parseDeliveryRecordId } from '../callbacks/callback-request.ts';
import type { EventCodec } from '../events/event-codec.ts';
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
 * With `callbacks` (the notifier) it also reads the callback-status events of the events topic
 * (`media.jobs.events.v1`, published by every notifier after each attempt, with the id of the
 * delivery record the attempt settled): the newest CALLBACK_EVENTS_AT_START records at start,
 * then each new one, so any notifier instance knows which delivery records were settled and
 * which terminal events' callbacks were tried, whether or not a status writer runs.
 *
 * What it cannot see: an outcome the status writer has not written back yet (it follows the
 * events topic, about a fetch wait behind), a callback status another notifier published less
 * than a fetch wait ago, jobs older than the newest READ_AT_START records, and callback statuses
 * older than the newest CALLBACK_EVENTS_AT_START events, at the process's start. Within one
 * process the outcomes it published itself, and the callbacks it scheduled and settled, are
 * known at once (`end`, `claimCallback`, `noteDelivery`).
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
   * True when the callback delivery record `deliveryId` was settled (its attempt made and its
   * outcome published), by this process or, with `callbacks`, by any notifier. Record ids name
   * a chain and an attempt (`deliveryRecordId`): a record is settled once its attempt, or a
   * later one of its chain, is. A manual redelivery starts a chain of its own.
   */
  deliveryHandled(jobId: string, deliveryId: string): boolean;
  /** Notes a callback delivery record settled. */
  noteDelivery(jobId: string, deliveryId: string): void;
  close(): Promise<void>;
}

interface Known {
  attempt: number;
  ended: boolean;
  /** Webhook ids of the job's callbacks scheduled (by this process) or tried (status). */
  callbacks: Set<string>;
  /** The highest attempt settled of each chain of the job's callback delivery records. */
  chains?: Map<string, number>;
}

/** Jobs remembered (about 200 bytes each); the least recently changed are forgotten first. */
const MAX_REMEMBERED = 100_000;

/**
 * How many status records a start reads: one per job, newest first (the topic is compacted).
 * Duplicates come within minutes of their original; 20,000 jobs back is hours at most rates,
 * at a few tens of MB read per start.
 */
export const READ_AT_START = 20_000;

/**
 * How many records of the events topic a notifier's start reads for callback statuses (with
 * `callbacks`). The topic holds every event, progress ticks too (about one a second per running
 * job): 100,000 are about 80 minutes at 20 jobs running at once, where a duplicate of a terminal
 * event or of a delivery record comes within minutes; beyond it the status topic's callback state
 * (READ_AT_START jobs) still stops a terminal event's second callback. A start reads it in about
 * 3.5 s on the test broker (docs/kafka.md).
 */
export const CALLBACK_EVENTS_AT_START = 100_000;

/** How long a start waits for the old records before taking work (the reading goes on). */
const READY_WITHIN_MS = 15_000;

export interface JobOutcomesDeps {
  bus: EventBus;
  log: Logger;
  /** With `callbacks`: decodes the callback-status events. */
  codec?: EventCodec;
}

export async function startJobOutcomes(
  deps: JobOutcomesDeps,
  options: { callbacks?: boolean } = {},
): Promise<JobOutcomes> {
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

  const settle = (jobId: string, deliveryId: string): void => {
    const { chain, attempt } = parseDeliveryRecordId(deliveryId);
    const chains = (known(jobId).chains ??= new Map());
    if ((chains.get(chain) ?? -1) < attempt) chains.set(chain, attempt);
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

  const callbackStatuses =
    options.callbacks && deps.codec
      ? await tailCallbackStatuses(deps.bus, deps.codec, (jobId, webhookId, deliveryId) => {
          known(jobId).callbacks.add(webhookId);
          if (deliveryId !== undefined) settle(jobId, deliveryId);
        })
      : undefined;

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
    deliveryHandled(jobId, deliveryId) {
      const { chain, attempt } = parseDeliveryRecordId(deliveryId);
      return (jobs.get(jobId)?.chains?.get(chain) ?? -1) >= attempt;
    },
    noteDelivery: settle,
    async close() {
      await Promise.all([subscription.close(0), callbackStatuses?.close(0)]);
    },
  };
}

/**
 * Follows the callback-status events of the events topic, from CALLBACK_EVENTS_AT_START back.
 * Its own reader kind: every member of a tail group reads the same topics (kafka-tail.ts).
 */
function tailCallbackStatuses(
  bus: EventBus,
  codec: EventCodec,
  note: (jobId: string, webhookId: string, deliveryId: string | undefined) => void,
) {
  return bus.tail({
    topics: [{ topic: topics.jobEvents, last: CALLBACK_EVENTS_AT_START }],
    reader: 'callback-status',
    readyWithinMs: READY_WITHIN_MS,
    handler: async (record: BusRecord) => {
      // Most of the topic is other events: the header spares decoding them.
      const type = record.headers['ce-type'] ?? record.headers['ce_type'];
      if (type !== undefined && type !== 'media.callback.status') return;
      const decoded = codec.decode(record);
      if (!decoded.ok || decoded.event.type !== 'media.callback.status') return;
      const { jobId, webhookId, deliveryId } = decoded.event.data;
      note(jobId, webhookId, deliveryId);
    },
  });
}
