import kafkajs from 'kafkajs';
import type { Admin, Batch, Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import type { BusRecord, DeliveryContext, SubscribeOptions, Subscription } from './event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import { createFairShare, NO_TENANT, type FairShare } from '../scheduling/fair-share.ts';
import { busyAwareAssigner, type MemberLoad } from './kafka-assigner.ts';
import { createRebalanceNudge, type RebalanceNudge } from './kafka-rebalance-nudge.ts';
import { reportLoad, watchGroupLoad, type GroupLoadWatch } from './kafka-group-load.ts';
import {
  asBusUnavailable,
  CONSUMER_RECOVERY,
  consumerStallMs,
  createReplacer,
  headersToStrings,
  startStallWatch,
  withDeadline,
  type ConsumerReplacer,
  type Disconnect,
  type StallWatch,
} from './kafka-support.ts';
import {
  admit,
  finishedOffsets,
  forgetCommitted,
  commitPoint,
  newTrack,
  partitionId,
  readyItems,
  unsettled,
  windowCount,
  type PartitionTrack,
  type WindowItem,
} from './kafka-window.ts';

export interface ConsumerSettings {
  topicPrefix: string;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  rebalanceTimeoutMs: number;
  maxWaitTimeMs: number;
  redeliveryDelayMs: number;
  abortWaitMs: number;
  /** The consumer's disconnect in close, bounded (KafkaBusOptions.disconnectTimeoutMs). */
  disconnect: Disconnect;
  /**
   * Records a subscription holds fetched and unfinished, running ones included (default 256,
   * at least its concurrency + 1). A job record is about 1 KiB, so the window costs little,
   * and the larger it is the further behind a backlog another organisation's job is seen.
   */
  windowRecords?: number;
  /**
   * How long a consumer may go without a fetch, a heartbeat or a join before it is replaced, ms
   * (default consumerStallMs in kafka-support.ts: 90 s at the bus's defaults).
   */
  stallMs?: number;
  /** Called when kafkajs gives a consumer up (a crash it does not restart from). */
  onConsumerDown?: () => void;
  /**
   * A Kafka client apart from the subscription's, for its rebalance nudges: kafkajs keeps one
   * cache of committed offsets per client and group, which a second consumer of the group on
   * the same client clears when it joins, crashing the first (default: the subscription's own).
   */
  nudgeClient?: () => Kafka;
}

/** A record being handled: the signal that takes it back, and the promise of its end. */
interface Running {
  controller: AbortController;
  settled: Promise<unknown>;
}

/** What one subscription's functions share. */
interface State {
  kafka: Kafka;
  consumer: Consumer;
  /** Replaces the consumer when it goes silent (consumerStallMs). */
  stall: StallWatch;
  /** Replaces the consumer (a silent one). */
  replacer: ConsumerReplacer;
  admin: Admin;
  log: Logger;
  settings: ConsumerSettings;
  options: SubscribeOptions;
  fullTopics: string[];
  concurrency: number;
  limit: number;
  fair: FairShare;
  /** Partitions (`topic:partition`) of the last group join. */
  owned: Set<string>;
  /** What this member knows of each partition it owns and has read from. */
  tracks: Map<string, PartitionTrack>;
  /** Committed positions being read for newly assigned partitions. */
  loading: Map<string, Promise<PartitionTrack>>;
  /**
   * Offsets this member finished on partitions whose track it dropped (revoked, or the consumer
   * crashed, e.g. while the broker was away) before a commit covered them: if the partition
   * comes back, they are skipped instead of run again.
   */
  finishedElsewhere: Map<string, Set<bigint>>;
  running: Map<WindowItem, Running>;
  commits: Map<string, Promise<void>>;
  arrivals: number;
  paused: boolean;
  drainWaiters: Array<() => void>;
  /** Called at the next group join. */
  joinWaiters: Array<() => void>;
  /** Handlers waiting to begin their work until the assignment of a join is known (begin). */
  assignWaiters: Array<() => void>;
  timer: NodeJS.Timeout | undefined;
  stopping: boolean;
  /**
   * Between this member's JoinGroup and its new assignment: the partitions it reported busy,
   * the only ones it may start records from meanwhile (the others may be given to another
   * member, which will start their records: a start here would be a second one).
   */
  joinHold: Set<string> | undefined;
  nudge: RebalanceNudge;
  /** Crowding, the idle watch (kafka-group-load.ts); set once the state exists. */
  load: GroupLoadWatch | undefined;
}

/**
 * One kafkajs consumer for one subscribe call, keeping a bounded window of records from every
 * partition it owns (kafka-window.ts). kafkajs only fetches: each batch is copied into the
 * window at once (its offsets resolved so the next fetch goes on), and every partition is paused
 * while the window is full. Handlers run outside kafkajs's loop, so a free slot takes any ready
 * record of any partition at once, fairly across tenants (fair-share.ts), and kafkajs keeps
 * heartbeating and rejoins a rebalance promptly however long the handlers run: a busy member
 * never holds a rebalance. A handler's `heartbeat()` is therefore a no-op here; a stuck job is
 * bounded by the job's own time-out and stall limits instead of by the lease.
 *
 * Offsets are committed by hand, per partition, up to the first unfinished record, with the
 * finished offsets beyond it in the metadata; the group's generation fences a member that lost
 * the partition. A crash between a handler's outcome and this commit (milliseconds) still runs
 * that record again: closing that gap would take Kafka transactions around outcome and offset.
 * Rebalances are eager (kafkajs has no cooperative protocol), so the partitions are assigned by
 * kafka-assigner.ts: a partition on which this member runs a record stays with it, and those
 * whose records only wait (not started, or started by a handler that only waits: waitOnly) go
 * where slots are free; between rebalances kafka-group-load.ts watches the group's load (crowding,
 * idle slots) and asks for one when records wait on a busy member. A stopping member makes the group rebalance
 * (kafka-rebalance-nudge.ts) when it starts to drain and each time one of its jobs ends, so its
 * waiting records move at once. A running record whose partition moves anyway (its member was
 * taken for dead) is aborted here and started again by its new owner. A rejected record is
 * handed back: it waits `redeliveryDelayMs` in the window, and later records of its key wait
 * behind it.
 */
export async function startKafkaSubscription(
  kafka: Kafka,
  log: Logger,
  settings: ConsumerSettings,
  options: SubscribeOptions,
): Promise<Subscription> {
  // Read at each join, once the state exists (kafkajs asks for it only when it joins).
  const made: { state?: State } = {};
  const consumer = newConsumer(kafka, settings, options, made);
  const s = newState(kafka, consumer, log, settings, options);
  made.state = s;
  watchGroup(s, consumer);
  s.load = watchGroupLoad(s, (track) => void commit(s, track));
  await runConsumer(s);
  let closing: Promise<void> | undefined;
  return { close: (graceMs = 0) => (closing ??= closeSubscription(s, graceMs)) };
}

function newConsumer(
  kafka: Kafka,
  settings: ConsumerSettings,
  options: SubscribeOptions,
  made: { state?: State },
): Consumer {
  return kafka.consumer({
    groupId: options.group,
    // Round robin too: members of an older version announce only that one, and the group uses
    // the assigner every member announces.
    partitionAssigners: [
      busyAwareAssigner(() => joinLoad(made.state, Math.max(1, options.concurrency ?? 1))),
      kafkajs.PartitionAssigners.roundRobin,
    ],
    sessionTimeout: settings.sessionTimeoutMs,
    heartbeatInterval: settings.heartbeatIntervalMs,
    rebalanceTimeout: settings.rebalanceTimeoutMs,
    maxWaitTimeInMs: settings.maxWaitTimeMs,
    allowAutoTopicCreation: false,
    ...CONSUMER_RECOVERY,
  });
}

function newState(
  kafka: Kafka,
  consumer: Consumer,
  log: Logger,
  settings: ConsumerSettings,
  options: SubscribeOptions,
): State {
  const concurrency = Math.max(1, options.concurrency ?? 1);
  const fullTopics = options.topics.map((t) => settings.topicPrefix + t);
  const groupLog = log.child({ group: options.group });
  const s: State = {
    kafka,
    consumer,
    stall: startStallWatch(consumerStallMs(settings), (reason) => s.replacer.replace(reason)),
    replacer: consumerReplacer(() => s, groupLog, settings),
    admin: kafka.admin(),
    log: groupLog,
    settings,
    options,
    fullTopics,
    concurrency,
    limit: Math.max(concurrency + 1, settings.windowRecords ?? 256),
    fair: createFairShare(options.fairness),
    owned: new Set(),
    tracks: new Map(),
    finishedElsewhere: new Map(),
    loading: new Map(),
    running: new Map(),
    commits: new Map(),
    arrivals: 0,
    paused: false,
    drainWaiters: [],
    joinWaiters: [],
    assignWaiters: [],
    timer: undefined,
    load: undefined,
    stopping: false,
    joinHold: undefined,
    nudge: createRebalanceNudge(settings.nudgeClient?.() ?? kafka, groupLog, {
      group: options.group,
      topics: fullTopics,
      sessionTimeoutMs: settings.sessionTimeoutMs,
      heartbeatIntervalMs: settings.heartbeatIntervalMs,
      rebalanceTimeoutMs: settings.rebalanceTimeoutMs,
      maxWaitTimeMs: settings.maxWaitTimeMs,
    }),
  };
  return s;
}

/** Connects, subscribes and runs the consumer; on a failure, leaves nothing running. */
async function runConsumer(s: State): Promise<void> {
  try {
    await s.admin.connect();
    await startConsumer(s);
  } catch (error) {
    s.load?.stop();
    s.stall.stop();
    await s.consumer.disconnect().catch(() => undefined);
    await s.admin.disconnect().catch(() => undefined);
    throw asBusUnavailable(error, `subscribe (group ${s.options.group})`);
  }
}

/** Connects `s.consumer`, subscribes it and runs it. */
async function startConsumer(s: State): Promise<void> {
  const { consumer, options } = s;
  await consumer.connect();
  await consumer.subscribe({ topics: s.fullTopics, fromBeginning: options.fromBeginning ?? false });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: 1,
    eachBatch: (payload) => takeBatch(s, payload),
  });
}

/**
 * Replaces a consumer that went silent (startStallWatch). Silent for longer than its session,
 * its partitions have already moved: what it ran is aborted here (as at a crash) and runs again
 * on their new owners.
 */
function consumerReplacer(
  state: () => State,
  log: Logger,
  settings: ConsumerSettings,
): ConsumerReplacer {
  return createReplacer({
    log,
    disconnect: settings.disconnect,
    retryMs: settings.redeliveryDelayMs,
    stopping: () => state().stopping,
    current: () => state().consumer,
    onReplace: () => forgetAssignment(state(), 'the consumer was replaced'),
    startNext: async () => {
      const s = state();
      s.consumer = newConsumer(s.kafka, s.settings, s.options, { state: s });
      s.paused = false;
      watchGroup(s, s.consumer);
      await startConsumer(s);
    },
  });
}

/** What a member knows of its assignment, dropped: its running records are aborted. */
function forgetAssignment(s: State, reason: string): void {
  s.owned = new Set();
  s.joinHold = undefined;
  for (const [id, track] of s.tracks) dropTrack(s, id, track, reason);
  for (const wake of s.assignWaiters.splice(0)) wake();
}

function joinLoad(s: State | undefined, slots: number): MemberLoad {
  const { load, busy } = reportLoad(s, slots);
  if (s) s.joinHold = busy;
  return load;
}

/** Follows `consumer`'s group events while it is the subscription's consumer. */
function watchGroup(s: State, consumer: Consumer): void {
  const { log } = s;
  s.stall.watch(consumer);
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    if (consumer !== s.consumer) return;
    s.joinHold = undefined;
    const owned = new Set(
      Object.entries(payload.memberAssignment).flatMap(([t, ps]) =>
        ps.map((p) => partitionId(t, p)),
      ),
    );
    s.owned = owned;
    // A kept partition keeps its whole window, waiting records included: kafkajs fetches it again
    // from the committed offset and every record already held is recognised ('seen'). Dropping
    // the waiting ones would leave a gap the next commit passes over while the partitions are
    // paused (a full window, a stop): those records would never run.
    // A commit the rebalance made fail is made again now that the generation is new.
    for (const [id, track] of s.tracks)
      if (!owned.has(id)) dropTrack(s, id, track, 'partition revoked by a rebalance');
      else void commit(s, track);
    // Pauses survive a rejoin in kafkajs: `paused` stays as it is, and pump resumes if it may.
    s.loading.clear();
    for (const wake of [...s.joinWaiters.splice(0), ...s.assignWaiters.splice(0)]) wake();
    log.info('kafka.group_joined', {
      memberId: payload.memberId,
      isLeader: payload.isLeader,
      partitions: owned.size,
    });
    pump(s);
  });
  consumer.on(consumer.events.REBALANCING, ({ payload }) => {
    if (consumer === s.consumer)
      log.info('kafka.group_rebalancing', { memberId: payload.memberId });
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (consumer !== s.consumer) return;
    // kafkajs restarts a consumer after a retriable crash; after any other it stays down.
    forgetAssignment(s, 'the consumer crashed');
    log.error('kafka.consumer_crashed', { error: payload.error, restart: payload.restart });
    if (!payload.restart) s.settings.onConsumerDown?.();
  });
}

function dropTrack(s: State, id: string, track: PartitionTrack, reason: string): void {
  s.tracks.delete(id);
  const finished = finishedOffsets(track);
  if (finished.size > 0) s.finishedElsewhere.set(id, finished);
  for (const item of track.items) s.running.get(item)?.controller.abort(new Error(reason));
}

/** The partition's track, reading its committed offset and metadata the first time. */
function trackOf(s: State, topic: string, partition: number): Promise<PartitionTrack> {
  const id = partitionId(topic, partition);
  const known = s.tracks.get(id);
  if (known) return Promise.resolve(known);
  let loading = s.loading.get(id);
  if (!loading) {
    loading = s.admin.fetchOffsets({ groupId: s.options.group, topics: [topic] }).then((res) => {
      const p = res[0]?.partitions.find((x) => x.partition === partition);
      const offset = p && Number(p.offset) >= 0 ? BigInt(p.offset) : undefined;
      const track = newTrack(
        topic,
        partition,
        offset === undefined ? undefined : { offset, metadata: p?.metadata ?? '' },
      );
      for (const o of s.finishedElsewhere.get(id) ?? [])
        if (offset === undefined || o >= offset) track.doneBefore.add(o);
      s.finishedElsewhere.delete(id);
      s.loading.delete(id);
      // A batch read before a rebalance took the partition away must leave no track behind.
      if (s.owned.has(id)) s.tracks.set(id, track);
      return track;
    });
    loading.catch(() => s.loading.delete(id));
    s.loading.set(id, loading);
  }
  return loading;
}

async function takeBatch(s: State, payload: EachBatchPayload): Promise<void> {
  const { batch } = payload;
  if (s.stopping || batch.isEmpty()) return;
  const track = await trackOf(s, batch.topic, batch.partition);
  if (s.tracks.get(partitionId(batch.topic, batch.partition)) !== track) return;
  track.highWatermark = BigInt(batch.highWatermark);
  for (const message of batch.messages) {
    if (s.stopping || !payload.isRunning() || payload.isStale()) break;
    const offset = BigInt(message.offset);
    const seen = admit(track, offset);
    if (seen === 'new' && windowCount(s.tracks.values()) >= s.limit) {
      // Not resolved: kafkajs reads it again once the partitions resume.
      pauseAll(s);
      break;
    }
    if (track.next === undefined || offset >= track.next) track.next = offset + 1n;
    if (seen !== 'seen') addItem(s, track, batch, message, seen === 'finished');
    payload.resolveOffset(message.offset);
  }
  if (windowCount(s.tracks.values()) >= s.limit) pauseAll(s);
  reportLag(s, track);
  pump(s);
}

function addItem(
  s: State,
  track: PartitionTrack,
  batch: Batch,
  message: KafkaMessage,
  finished: boolean,
): void {
  const record = toBusRecord(s.settings.topicPrefix, batch.topic, message);
  const item: WindowItem = {
    topic: batch.topic,
    partition: batch.partition,
    offset: BigInt(message.offset),
    key: record.key,
    tenant: finished ? NO_TENANT : (s.options.fairness?.tenantOf(record) ?? NO_TENANT),
    record: finished ? undefined : record,
    state: finished ? 'done' : 'waiting',
    retryAt: 0,
    arrival: (s.arrivals += 1),
  };
  track.items.push(item);
  if (finished) {
    s.log.info('kafka.record_skipped', { ...where(item), reason: 'finished before a restart' });
    void commit(s, track);
  }
}

/** Starts ready records in the free slots, fairly across tenants. */
function pump(s: State): void {
  if (s.stopping) return;
  const now = Date.now();
  const free = s.concurrency - s.running.size;
  if (free > 0) {
    const hold = s.joinHold;
    const ready = readyItems(s.tracks.values(), now).filter(
      (i) => !hold || hold.has(partitionId(i.topic, i.partition)),
    );
    for (const item of s.fair.pick(ready, free, (i) => i.tenant)) start(s, item);
  }
  if (s.paused && windowCount(s.tracks.values()) < s.limit) resumeAll(s);
  armRetryTimer(s, now);
}

function start(s: State, item: WindowItem): void {
  s.load?.started();
  const controller = new AbortController();
  const record = item.record;
  item.state = 'running';
  const context: DeliveryContext = {
    signal: controller.signal,
    heartbeat: async () => {},
    waitOnly: () => {
      if (item.state === 'running') item.movable = true;
    },
    begin: () => begin(s, item),
  };
  const handled = Promise.resolve()
    .then(() => {
      if (!record) throw new Error('record bytes missing');
      return s.options.handler(record, context);
    })
    .then(
      () => 'resolved' as const,
      (error: unknown) => {
        if (!controller.signal.aborted)
          s.log.warn('kafka.record_handed_back', { ...where(item), error });
        return 'rejected' as const;
      },
    );
  const aborted = new Promise<'aborted'>((resolve) =>
    controller.signal.addEventListener('abort', () => resolve('aborted'), { once: true }),
  );
  const settled = Promise.race([handled, aborted]).then((outcome) =>
    finish(s, item, controller.signal.aborted ? 'aborted' : outcome),
  );
  s.running.set(item, { controller, settled: handled });
  void settled;
}

/**
 * A waiting record's handler begins its work. If this member reported the record waiting to a
 * join whose assignment has not come, the partition may be going to another member, which will
 * run it: the work begins only once the assignment is known (within a session time-out), so it
 * is never begun here to be thrown away a moment later.
 */
async function begin(s: State, item: WindowItem): Promise<void> {
  const reportedWaiting =
    s.joinHold !== undefined && !s.joinHold.has(partitionId(item.topic, item.partition));
  if (item.state === 'running' && item.movable === true && reportedWaiting)
    await calledOrAfter(s.assignWaiters, s.settings.sessionTimeoutMs);
  if (item.state === 'running') item.movable = false;
}

function finish(s: State, item: WindowItem, outcome: 'resolved' | 'rejected' | 'aborted'): void {
  let committed = Promise.resolve();
  s.running.delete(item);
  delete item.movable;
  s.fair.finished(item.tenant);
  const track = s.tracks.get(partitionId(item.topic, item.partition));
  // A handler that finished after losing its partition must not commit over the new owner.
  if (!track?.items.includes(item)) {
    if (track) track.items = track.items.filter((i) => i !== item);
  } else if (outcome === 'aborted') {
    // Aborted by a stop while the partition is still held: the record stays in the window,
    // unfinished, so no commit (a rejoin's, the stop's) passes over it.
    item.state = 'waiting';
    item.retryAt = Date.now() + s.settings.redeliveryDelayMs;
  } else if (outcome === 'resolved') {
    item.state = 'done';
    item.record = undefined;
    committed = commit(s, track);
  } else {
    item.state = 'waiting';
    item.retryAt = Date.now() + s.settings.redeliveryDelayMs;
  }
  if (s.running.size === 0) for (const wake of s.drainWaiters.splice(0)) wake();
  // Draining: the partition of the job that ended (and its waiting records) can move now, once
  // its commit is in: a rebalance during the commit would fail it, and the next owner would run
  // the finished record again.
  else if (s.stopping)
    void committed.then(() => s.nudge.request('a job of a stopping member ended'));
  pump(s);
}

/** Commits one partition, one commit at a time, to its first unfinished record. */
function commit(s: State, track: PartitionTrack): Promise<void> {
  const id = partitionId(track.topic, track.partition);
  const previous = s.commits.get(id) ?? Promise.resolve();
  const next = previous.then(async () => {
    if (s.tracks.get(id) !== track) return;
    const point = commitPoint(track);
    if (!point) return;
    const { offset, metadata } = point;
    // Only a change of the queued mark: a failed commit then loses nothing.
    const markOnly = !unsettled(track);
    try {
      await s.consumer.commitOffsets([
        { topic: track.topic, partition: track.partition, offset: offset.toString(), metadata },
      ]);
      track.committed = point;
      forgetCommitted(track);
      reportLag(s, track);
    } catch (error) {
      // Left uncommitted, the records come again (here or to another member); finished ones
      // are then skipped only if an earlier commit named them: handlers are idempotent anyway.
      const at = { topic: track.topic, partition: track.partition, error };
      if (markOnly) s.log.debug('kafka.commit_failed', { ...at, markOnly });
      else s.log.warn('kafka.commit_failed', at);
    }
  });
  s.commits.set(id, next);
  return next;
}

function reportLag(s: State, track: PartitionTrack): void {
  const base = track.committed?.offset ?? track.items[0]?.offset;
  if (!s.options.onLag || track.highWatermark === undefined || base === undefined) return;
  const lag = track.highWatermark > base ? Number(track.highWatermark - base) : 0;
  s.options.onLag(track.topic.slice(s.settings.topicPrefix.length), track.partition, lag);
}

function pauseAll(s: State): void {
  if (s.paused) return;
  s.paused = true;
  try {
    s.consumer.pause(s.fullTopics.map((topic) => ({ topic })));
  } catch {
    // Restarting: the consumer reads from the committed offsets anyway.
  }
}

function resumeAll(s: State): void {
  s.paused = false;
  try {
    s.consumer.resume(s.fullTopics.map((topic) => ({ topic })));
  } catch {
    // Restarting: the new consumer starts unpaused.
  }
}

// One timer for the handed-back records: the earliest moment one may start again.
function armRetryTimer(s: State, now: number): void {
  clearTimeout(s.timer);
  s.timer = undefined;
  let at = Infinity;
  for (const t of s.tracks.values())
    for (const i of t.items)
      if (i.state === 'waiting' && i.retryAt > now) at = Math.min(at, i.retryAt);
  if (at !== Infinity) s.timer = setTimeout(() => pump(s), at - now);
}

async function closeSubscription(s: State, graceMs: number): Promise<void> {
  s.stopping = true;
  clearTimeout(s.timer);
  s.load?.stop();
  s.stall.stop();
  try {
    s.consumer.pause(s.fullTopics.map((topic) => ({ topic })));
  } catch {
    // Not running (crashed or never joined): nothing to pause.
  }
  // Its waiting records and idle partitions go to other members now, not after the drain.
  if (s.running.size > 0 && graceMs > 0) s.nudge.request('the member is stopping');
  await waitDrained(s, graceMs);
  // The grace is over: what still runs is handed back now, not after the nudge has left (up to
  // 5 s more, long enough for a job to finish past SHUTDOWN_GRACE_MS).
  const unfinished = [...s.running.values()];
  for (const r of unfinished) r.controller.abort(new Error('the subscription closed'));
  if (unfinished.length > 0) s.log.info('kafka.handlers_aborted', { count: unfinished.length });
  await withDeadline(s.nudge.close(), Date.now() + 5000, 'rebalance nudge').catch(() => undefined);
  // Commits of records finished within the grace period go out before the consumer leaves.
  await Promise.allSettled([...s.commits.values()]);
  await settleCommits(s);
  // A replacement under way ends once it sees `stopping`; its consumer is disconnected here.
  await withDeadline(
    s.replacer.pending ?? Promise.resolve(),
    Date.now() + s.settings.sessionTimeoutMs,
    'consumer replacement',
  ).catch(() => undefined);
  await s.settings.disconnect(s.consumer, 'consumer disconnect');
  await s.admin.disconnect().catch(() => undefined);
  const settled = Promise.allSettled(unfinished.map((r) => r.settled));
  await withDeadline(settled, Date.now() + s.settings.abortWaitMs, 'aborted handlers').catch(() =>
    s.log.warn('kafka.handlers_still_running', { count: unfinished.length }),
  );
}

/**
 * A commit refused by a rebalance under way (a nudge's) is made again at the next join: wait for
 * it, twice at most and each within a session timeout, rather than leave finished records to run
 * again on the next owner.
 */
async function settleCommits(s: State): Promise<void> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const open = [...s.tracks.values()].filter(unsettled);
    if (open.length === 0) return;
    await calledOrAfter(s.joinWaiters, s.settings.sessionTimeoutMs);
    await Promise.allSettled(open.map((track) => commit(s, track)));
  }
}

function waitDrained(s: State, ms: number): Promise<void> {
  if (s.running.size === 0) return Promise.resolve();
  return calledOrAfter(s.drainWaiters, ms);
}

/** Resolves when the callback it adds to `waiters` is called, or after `ms` at the latest. */
function calledOrAfter(waiters: Array<() => void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      resolve();
    }
    waiters.push(done);
  });
}

function where(i: WindowItem): Record<string, unknown> {
  return { topic: i.topic, partition: i.partition, offset: i.offset.toString() };
}

function toBusRecord(prefix: string, topic: string, message: KafkaMessage): BusRecord {
  return {
    topic: topic.slice(prefix.length),
    key: message.key?.toString('utf8') ?? '',
    value: message.value ?? Buffer.alloc(0),
    headers: headersToStrings(message.headers),
  };
}
