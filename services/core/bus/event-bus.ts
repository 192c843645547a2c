/**
 * The event bus the services run on. Two implementations: the embedded bus (all-in-one,
 * file-backed) and Kafka. Handlers never know which one they are on.
 *
 * The consumer stays behind `subscribe`: a Kafka share-group consumer (KIP-932), once a Node
 * client has one, would replace kafka-subscription.ts and kafka-group-load.ts (docs/kafka.md,
 * "Scaling and fair scheduling").
 */
import type { FairShareOptions } from '../scheduling/fair-share.ts';

/** A record as the bus carries it: bytes, keyed by job id so one job's records stay ordered. */
export interface BusRecord {
  topic: string;
  key: string;
  value: Buffer;
  /**
   * Kafka record headers (the embedded bus keeps them in a column). Besides the CloudEvents
   * ones they carry the job's W3C trace context, `traceparent` and `tracestate`, from the
   * submission to the callback (observability/tracing.ts); forwarding a record keeps them.
   */
  headers: Readonly<Record<string, string>>;
}

export type OutgoingRecord = Omit<BusRecord, 'headers'> & {
  headers?: Record<string, string>;
  /**
   * Epoch ms before which the record is not delivered (default: at once). Waiting is the bus's
   * job: a scheduled record holds no partition, window or handler slot while it waits. Records
   * of one key published with a due time may be overtaken by later records of that key that
   * are due sooner (it is published, in effect, at its due time).
   */
  notBefore?: number;
};

export interface DeliveryContext {
  /** Aborted when the subscription closes or this member loses the record's partition. */
  signal: AbortSignal;
  /** Tells the bus this member is alive. Call it from real progress, not from a timer. */
  heartbeat(): Promise<void>;
  /**
   * The handler only waits from now on (for its input, for capacity): its record counts as
   * waiting work, and the bus may give its partition to a member with free slots, aborting the
   * handler here; its new owner runs it afresh at no loss of work.
   */
  waitOnly(): void;
  /**
   * The handler's work begins; from then on its record stays. Resolves at once, or, when this
   * member has told a rebalance still under way that the record only waits, once that
   * rebalance has assigned the partitions (the signal is aborted by then if the record moved).
   */
  begin(): Promise<void>;
}

/**
 * Handles one record. Resolving commits the record; rejecting hands it back to be delivered
 * again later (so a handler rejects only when it could not publish the record's outcome).
 */
export type RecordHandler = (record: BusRecord, context: DeliveryContext) => Promise<void>;

export interface SubscribeOptions {
  /** Consumer group: members of one group share the records; each group sees every record. */
  group: string;
  topics: readonly string[];
  /** Records handled at once by this member (default 1). */
  concurrency?: number;
  /** A group with no committed position starts at the oldest record (default false: newest). */
  fromBeginning?: boolean;
  handler: RecordHandler;
  /**
   * Shares of the slots between tenants (fair-share.ts). Without it every record is of one
   * tenant: the oldest ready record takes a free slot.
   */
  fairness?: FairnessOptions;
  /** Told the records not yet handled, per topic and partition (consumer lag), as it changes. */
  onLag?: (topic: string, partition: number, records: number) => void;
  /**
   * Records this member could begin work on at once, when the handler knows better than the
   * count of free slots (a media worker: its free CPU slots, less the jobs waiting for one).
   * The group gives records that only wait to members with room for work, never to one without.
   */
  freeForWork?: () => number;
}

export interface FairnessOptions extends FairShareOptions {
  /**
   * The tenant (organisation) of a record; called once per record before it may start, so it
   * must be cheap and must not throw. Unreadable records answer any fixed string.
   */
  tenantOf: (record: BusRecord) => string;
}

/** A topic read by `tail`, and how far back from its end. */
export interface TailTopic {
  topic: string;
  /**
   * Records published before the call to read first, counted back from the end: about this many
   * in all (on Kafka, shared evenly among the partitions). 0: only records published from now on.
   */
  last: number;
}

export interface TailOptions {
  topics: readonly TailTopic[];
  /**
   * What kind of reader this is (e.g. 'cancels'). On Kafka the readers of one kind share one
   * consumer group, `<tail group>-<reader>` (the status view's, with none: `<prefix>media-tail`),
   * so that workers starting and stopping do not make the ingresses' readers rejoin, and every
   * member of a group reads the same topics (kafka-tail.ts). The embedded bus needs no group.
   */
  reader?: string;
  /** Handles one record; records of one partition come in order. A rejection is logged and skipped. */
  handler: (record: BusRecord) => Promise<void>;
}

export interface Subscription {
  /** Stops taking records; waits up to `graceMs` for running handlers, then aborts them. */
  close(graceMs?: number): Promise<void>;
}

export interface EventBus {
  /**
   * Resolves only once every record is durable; rejects with BusUnavailableError otherwise: with
   * BusUncertainError when the records may have been written all the same, with its parent class
   * only when none was.
   */
  publish(records: readonly OutgoingRecord[]): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  /**
   * Reads every partition of the topics, for this process alone: nothing is committed and no
   * position is shared with other readers, so it suits a local copy of a compacted topic.
   * Records due later (`notBefore`) are not included. Resolves once the records that were
   * there at the call are handled, or after `readyWithinMs` (the reading goes on).
   */
  tail(options: TailOptions & { readyWithinMs: number }): Promise<Subscription>;
  /** True when the bus can take a publish now (for /readyz). */
  isReady(): Promise<boolean>;
  close(): Promise<void>;
}

export class BusUnavailableError extends Error {
  override name = 'BusUnavailableError';
}

/**
 * A publish that failed after its records went to the brokers: they may have been written (and
 * may still be, by a request in flight), or not. Only the Kafka bus says so; a caller that must
 * not claim "nothing was queued" tells the two apart (the ingress answers `bus_uncertain`).
 */
export class BusUncertainError extends BusUnavailableError {
  override name = 'BusUncertainError';
}

/** Topic names; the topic table of docs/design.md ("Events") lists the same. */
export const topics = {
  transcodeRequests: 'media.jobs.transcode.v1',
  summaryRequests: 'media.jobs.summary.v1',
  streamRequests: 'media.jobs.stream.v1',
  jobEvents: 'media.jobs.events.v1',
  /** Cancels of jobs (key job id); every worker process reads all of them (status/job-cancels.ts). */
  jobCancels: 'media.jobs.cancel.v1',
  deadLetter: 'media.jobs.dead-letter.v1',
  /** Callback attempts to make; a retry is published here again with a due time. */
  callbacks: 'media.callbacks.v1',
  /**
   * The latest status of each job (key job id, value its whole state as the status view shows
   * it), written once per state change by the status writer (job-status-writer.ts). Compacted:
   * only the newest record of a key is sure to be kept.
   */
  jobStatus: 'media.jobs.status.v1',
  // Kafka only: records published with a future `notBefore` wait here (kafka-delay.ts).
  delay1s: 'media.jobs.delay-1s.v1',
  delay10s: 'media.jobs.delay-10s.v1',
  delay1m: 'media.jobs.delay-1m.v1',
  delay10m: 'media.jobs.delay-10m.v1',
  delay1h: 'media.jobs.delay-1h.v1',
} as const;

/** Topics where only the newest record of each key counts (Kafka `cleanup.policy=compact`). */
export const compactedTopics: ReadonlySet<string> = new Set([topics.jobStatus]);

export const requestTopicOf = {
  transcode: topics.transcodeRequests,
  summary: topics.summaryRequests,
  stream: topics.streamRequests,
} as const;
