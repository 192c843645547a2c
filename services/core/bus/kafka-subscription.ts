import type { Consumer, EachMessagePayload, Kafka, KafkaMessage } from 'kafkajs';
import type { BusRecord, DeliveryContext, SubscribeOptions, Subscription } from './event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import {
  asBusUnavailable,
  headersToStrings,
  kafkaErrorType,
  withDeadline,
} from './kafka-support.ts';

export interface ConsumerSettings {
  topicPrefix: string;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  rebalanceTimeoutMs: number;
  maxWaitTimeMs: number;
  redeliveryDelayMs: number;
  abortWaitMs: number;
  /** Bounds the consumer's disconnect in close. */
  requestTimeoutMs: number;
  /** Called when kafkajs gives a consumer up (a crash it does not restart from). */
  onConsumerDown?: () => void;
}

/** One record being handled: its position, and the signal that takes it back from the handler. */
interface Delivery {
  topic: string;
  partition: number;
  offset: string;
  controller: AbortController;
  settled: Promise<unknown>;
}

type Outcome = 'resolved' | 'rejected' | 'aborted';

/** What one subscription's functions share. */
interface State {
  consumer: Consumer;
  log: Logger;
  settings: ConsumerSettings;
  options: SubscribeOptions;
  fullTopics: string[];
  deliveries: Set<Delivery>;
  drainWaiters: Array<() => void>;
  resumeTimers: Set<NodeJS.Timeout>;
  /** Partitions per topic this member owns, from the last group join. */
  assignment: Map<string, Set<number>>;
  stopping: boolean;
}

// Heartbeat answers meaning that the group went on without this member: its partitions are gone.
const MEMBERSHIP_LOST = new Set(['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'FENCED_INSTANCE_ID']);

/**
 * One kafkajs consumer for one subscribe call. Offsets are committed by hand, one record at a
 * time, only after its handler resolved and only while this member still owns the partition.
 * A rejected record is handed back: its partition pauses for `redeliveryDelayMs` and is read
 * again from that record, so later records of the same keys never overtake it.
 *
 * kafkajs reads one batch per partition, hands batches to at most `concurrency` workers and
 * fetches again only when all are done, so prefetch is bounded and records of one partition are
 * handled in order (concurrency is across partitions). It also rejoins a rebalancing group only
 * once the running records are done, which is why a long handler must call `heartbeat()`.
 */
export async function startKafkaSubscription(
  kafka: Kafka,
  log: Logger,
  settings: ConsumerSettings,
  options: SubscribeOptions,
): Promise<Subscription> {
  const consumer = kafka.consumer({
    groupId: options.group,
    sessionTimeout: settings.sessionTimeoutMs,
    heartbeatInterval: settings.heartbeatIntervalMs,
    rebalanceTimeout: settings.rebalanceTimeoutMs,
    maxWaitTimeInMs: settings.maxWaitTimeMs,
    allowAutoTopicCreation: false,
  });
  const s: State = {
    consumer,
    log: log.child({ group: options.group }),
    settings,
    options,
    fullTopics: options.topics.map((t) => settings.topicPrefix + t),
    deliveries: new Set(),
    drainWaiters: [],
    resumeTimers: new Set(),
    assignment: new Map(),
    stopping: false,
  };
  watchGroup(s);
  try {
    await consumer.connect();
    await consumer.subscribe({
      topics: s.fullTopics,
      fromBeginning: options.fromBeginning ?? false,
    });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: Math.max(1, options.concurrency ?? 1),
      eachMessage: (payload) => handleMessage(s, payload),
    });
  } catch (error) {
    await consumer.disconnect().catch(() => undefined);
    throw asBusUnavailable(error, `subscribe (group ${options.group})`);
  }
  let closing: Promise<void> | undefined;
  return { close: (graceMs = 0) => (closing ??= closeSubscription(s, graceMs)) };
}

function watchGroup(s: State): void {
  const { consumer, log } = s;
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    s.assignment = new Map(
      Object.entries(payload.memberAssignment).map(([t, ps]) => [t, new Set(ps)]),
    );
    for (const d of s.deliveries)
      if (!owns(s, d)) d.controller.abort(new Error('partition revoked by a rebalance'));
    const partitions = [...s.assignment.values()].reduce((n, ps) => n + ps.size, 0);
    log.info('kafka.group_joined', {
      memberId: payload.memberId,
      isLeader: payload.isLeader,
      partitions,
    });
  });
  consumer.on(consumer.events.REBALANCING, ({ payload }) =>
    log.info('kafka.group_rebalancing', { memberId: payload.memberId }),
  );
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    // kafkajs restarts a consumer after a retriable crash; after any other it stays down.
    s.assignment = new Map();
    log.error('kafka.consumer_crashed', { error: payload.error, restart: payload.restart });
    if (!payload.restart) s.settings.onConsumerDown?.();
  });
}

async function handleMessage(s: State, payload: EachMessagePayload): Promise<void> {
  // Closing: left uncommitted for the partition's next owner.
  if (s.stopping) return;
  const { topic, partition, message } = payload;
  const d: Delivery = {
    topic,
    partition,
    offset: message.offset,
    controller: new AbortController(),
    settled: Promise.resolve(),
  };
  s.deliveries.add(d);
  try {
    const outcome = await deliver(s, d, toBusRecord(s.settings.topicPrefix, topic, message), () =>
      payload.heartbeat(),
    );
    if (outcome === 'resolved') await commit(s, d);
    else if (outcome === 'rejected') handBack(s, d);
  } finally {
    // Drained only after the commit: close must not stop the consumer under it.
    s.deliveries.delete(d);
    if (s.deliveries.size === 0) for (const wake of s.drainWaiters.splice(0)) wake();
  }
}

async function deliver(
  s: State,
  d: Delivery,
  record: BusRecord,
  kafkaHeartbeat: () => Promise<void>,
): Promise<Outcome> {
  const context: DeliveryContext = {
    signal: d.controller.signal,
    heartbeat: () => heartbeat(s, d, kafkaHeartbeat),
  };
  const handled = Promise.resolve()
    .then(() => s.options.handler(record, context))
    .then(
      () => 'resolved' as const,
      (error: unknown) => {
        if (!d.controller.signal.aborted)
          s.log.warn('kafka.record_handed_back', { ...where(d), error });
        return 'rejected' as const;
      },
    );
  d.settled = handled;
  const aborted = new Promise<Outcome>((resolve) =>
    d.controller.signal.addEventListener('abort', () => resolve('aborted'), { once: true }),
  );
  const outcome = await Promise.race([handled, aborted]);
  // A handler that finished after losing its partition must not commit over the new owner.
  return d.controller.signal.aborted ? 'aborted' : outcome;
}

async function heartbeat(
  s: State,
  d: Delivery,
  kafkaHeartbeat: () => Promise<void>,
): Promise<void> {
  if (d.controller.signal.aborted) return;
  try {
    await kafkaHeartbeat();
  } catch (error) {
    const type = kafkaErrorType(error);
    // The group waits (up to rebalanceTimeoutMs) for this member, which rejoins once its
    // running records are done; until then the partition is still ours.
    if (type === 'REBALANCE_IN_PROGRESS') return;
    if (type !== undefined && MEMBERSHIP_LOST.has(type))
      return loseAll(s, `this member left the group (${type})`);
    s.log.debug('kafka.heartbeat_failed', { error });
  }
}

function loseAll(s: State, reason: string): void {
  if (s.deliveries.size > 0)
    s.log.warn('kafka.records_taken_back', { reason, count: s.deliveries.size });
  for (const d of s.deliveries) d.controller.abort(new Error(reason));
}

async function commit(s: State, d: Delivery): Promise<void> {
  if (!owns(s, d))
    return s.log.warn('kafka.commit_skipped', { ...where(d), reason: 'partition not assigned' });
  try {
    await s.consumer.commitOffsets([
      { topic: d.topic, partition: d.partition, offset: (BigInt(d.offset) + 1n).toString() },
    ]);
  } catch (error) {
    // Left uncommitted, the record comes again (here or to another member): handlers are idempotent.
    s.log.warn('kafka.commit_failed', { ...where(d), error });
  }
}

function handBack(s: State, d: Delivery): void {
  const tp = [{ topic: d.topic, partitions: [d.partition] }];
  try {
    // kafkajs drops the rest of a batch whose partition has a pending seek, so records after
    // this one are read again after it, in order.
    s.consumer.pause(tp);
    s.consumer.seek({ topic: d.topic, partition: d.partition, offset: d.offset });
  } catch (error) {
    // The consumer is restarting: it reads again from the committed offset anyway.
    return s.log.warn('kafka.hand_back_failed', { ...where(d), error });
  }
  const timer = setTimeout(() => {
    s.resumeTimers.delete(timer);
    if (s.stopping) return;
    try {
      s.consumer.resume(tp);
    } catch {
      // Restarting: the new consumer group starts unpaused.
    }
  }, s.settings.redeliveryDelayMs);
  s.resumeTimers.add(timer);
}

async function closeSubscription(s: State, graceMs: number): Promise<void> {
  s.stopping = true;
  for (const timer of s.resumeTimers) clearTimeout(timer);
  s.resumeTimers.clear();
  try {
    s.consumer.pause(s.fullTopics.map((topic) => ({ topic })));
  } catch {
    // Not running (crashed or never joined): nothing to pause.
  }
  await waitDrained(s, graceMs);
  const unfinished = [...s.deliveries];
  for (const d of unfinished) d.controller.abort(new Error('the subscription closed'));
  if (unfinished.length > 0) s.log.info('kafka.handlers_aborted', { count: unfinished.length });
  await withDeadline(
    s.consumer.disconnect(),
    Date.now() + s.settings.requestTimeoutMs,
    'consumer disconnect',
  ).catch((error: unknown) => s.log.warn('kafka.consumer_disconnect_failed', { error }));
  const settled = Promise.allSettled(unfinished.map((d) => d.settled));
  await withDeadline(settled, Date.now() + s.settings.abortWaitMs, 'aborted handlers').catch(() =>
    s.log.warn('kafka.handlers_still_running', { count: unfinished.length }),
  );
}

function waitDrained(s: State, ms: number): Promise<void> {
  if (s.deliveries.size === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      resolve();
    }
    s.drainWaiters.push(done);
  });
}

function owns(s: State, d: Delivery): boolean {
  return s.assignment.get(d.topic)?.has(d.partition) === true;
}

function where(d: Delivery): Record<string, unknown> {
  return { topic: d.topic, partition: d.partition, offset: d.offset };
}

function toBusRecord(prefix: string, topic: string, message: KafkaMessage): BusRecord {
  return {
    topic: topic.slice(prefix.length),
    key: message.key?.toString('utf8') ?? '',
    value: message.value ?? Buffer.alloc(0),
    headers: headersToStrings(message.headers),
  };
}
