import { topics, type BusRecord, type EventBus, type Subscription } from '../bus/event-bus.ts';
import type { EventCodec, JobEvent } from '../events/event-codec.ts';

/** Consumer group of the status writers (one member per ingress copy). */
export const STATUS_WRITER_GROUP = 'status-writer';

/** The held job states the writer folds into and publishes from (job-status-view.ts). */
export interface HeldStates {
  /** The job's state as held now, as its JSON text; undefined when not held. */
  text(jobId: string): string | undefined;
  /** Folds a state-changing event into the held state; a change marks the job unwritten. */
  apply(event: JobEvent): void;
  /** Jobs whose state was folded here and is not published yet. */
  readonly unwritten: Set<string>;
}

export interface JobStatusWriter {
  /** Joins the writers' group and writes each state change it reads. */
  subscribe(group?: string): Promise<Subscription>;
  /** Publishes the job's held state if it is unwritten (after any publish of it under way). */
  publish(jobId: string): Promise<void>;
}

/**
 * The status writer: one consumer group (`status-writer`) shared by the ingress copies reads the
 * request topics, the events topic and the cancel topic once, folds each state change into the
 * job's state (job-status-fold.ts, through the view's store) and publishes that whole state to
 * the compacted status topic (key job id). Progress ticks are not written. Each state change is
 * thus written once (again only after a crash between publish and commit: the same state,
 * harmless under compaction).
 */
export function createJobStatusWriter(
  deps: { bus: EventBus; codec: EventCodec },
  held: HeldStates,
): JobStatusWriter {
  const publish = publishInOrder(deps.bus, held);

  // A rejection hands the record back, so a state not written is tried again.
  const writeStateChange = async (record: BusRecord): Promise<void> => {
    const decoded = deps.codec.decode(record);
    if (!decoded.ok) return;
    const event = decoded.event;
    if (event.type === 'media.job.progress' || event.type === 'media.callback.delivery') return;
    held.apply(event);
    // Also when the event changed nothing here: the state may have been folded before and not
    // written (a request this copy applied at submission, a publish that failed).
    await publish(event.data.jobId);
  };

  return {
    subscribe: (group = STATUS_WRITER_GROUP) =>
      deps.bus.subscribe({
        group,
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
    publish,
  };
}

/** Publishes a job's held state if it is unwritten; one job's publishes go out in order. */
function publishInOrder(bus: EventBus, held: HeldStates): (jobId: string) => Promise<void> {
  /** Per job, the last status publish under way. */
  const writing = new Map<string, Promise<void>>();
  return (jobId) => {
    const previous = writing.get(jobId) ?? Promise.resolve();
    const done = previous.then(async () => {
      // The newest state when its turn comes, so a later publish never carries an older state.
      const text = held.text(jobId);
      if (text === undefined || !held.unwritten.has(jobId)) return;
      held.unwritten.delete(jobId);
      try {
        await bus.publish([{ topic: topics.jobStatus, key: jobId, value: Buffer.from(text) }]);
      } catch (error) {
        // Unless a newer state came meanwhile, this one is still to be written.
        if (held.text(jobId) === text) held.unwritten.add(jobId);
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
}
