import type { Consumer, EachMessagePayload, Kafka, Message, TopicMessages } from 'kafkajs';
import { topics, type OutgoingRecord } from './event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import type { ConsumerSettings } from './kafka-subscription.ts';
import {
  asBusUnavailable,
  CONSUMER_RECOVERY,
  consumerStallMs,
  createReplacer,
  headersToStrings,
  startStallWatch,
  type ConsumerReplacer,
  type StallWatch,
} from './kafka-support.ts';

/*
 * Scheduled records on Kafka (DESIGN §3, "Waiting is the bus's job").
 *
 * Kafka has no per-record due time, and a consumer that waits on a record holds its whole
 * partition. So a record published with a future `notBefore` goes to one of a few delay topics
 * instead of its target, and one forwarder per process moves it on once due:
 *
 * - Tiers of 1 s, 10 s, 1 min, 10 min and 1 h. A record goes to the LARGEST tier not longer
 *   than its remaining delay (the smallest when the delay is shorter), and is released at
 *   min(due, enqueuedAt + tier). Within one partition of one tier, records are appended in
 *   (roughly) enqueue order, so release times are monotonic in partition order: when the head
 *   is not released yet, nothing behind it is either (up to clock skew between producers, and
 *   a record released early because it is due is never held longer than its own bound). The
 *   forwarder can therefore wait on the head alone, without reading ahead.
 * - Released but not due yet (the tier was shorter than the delay), the record is re-published
 *   into the tier for what remains: a 25 min delay takes 10 min + 10 min + 1 min × 5. At most
 *   a few hops per record, each bounded by the tier below.
 * - Waiting never sleeps in a handler: the forwarder pauses the partition, seeks back to the
 *   head and resumes it with a timer at the release time, so the group keeps heartbeating and
 *   the other partitions keep flowing.
 * - Forwarding is at-least-once: produce (idempotent, acks=all) to the target topic with the
 *   same key, value and headers (minus the delay headers), then commit. A failed produce is not
 *   committed; the partition is paused and read again from that record after a pause. A crash
 *   between produce and commit forwards the record twice; consumers are idempotent anyway.
 * - The forwarder is one consumer group (`<prefix>media-scheduler` by default) shared by every
 *   process that subscribes to anything, started on the first subscribe; its committed offsets
 *   make scheduled records durable across restarts and rebalances.
 */

/** Delay tiers, shortest first. */
export const delayTiers: readonly { ms: number; topic: string }[] = [
  { ms: 1000, topic: topics.delay1s },
  { ms: 10_000, topic: topics.delay10s },
  { ms: 60_000, topic: topics.delay1m },
  { ms: 600_000, topic: topics.delay10m },
  { ms: 3_600_000, topic: topics.delay1h },
];

/** Headers a scheduled record carries while in a delay topic (stripped when forwarded). */
export const delayHeaders = {
  /** Target topic, without the bus's topic prefix. */
  target: 'x-delay-target',
  /** Due time, epoch ms. */
  due: 'x-delay-due',
  /** When it entered its current delay topic, epoch ms. */
  enqueued: 'x-delay-enqueued',
} as const;

const STRIPPED = new Set<string>(Object.values(delayHeaders));

// setTimeout fires at once for longer delays; waking early only re-arms the wait.
const MAX_TIMER_MS = 2 ** 31 - 1;

function tierFor(remainingMs: number): { ms: number; topic: string } {
  let chosen = delayTiers[0];
  for (const tier of delayTiers) if (tier.ms <= remainingMs) chosen = tier;
  if (!chosen) throw new Error('no delay tiers');
  return chosen;
}

/**
 * Where a record goes on the wire (topic without prefix): its own topic when due by `now`
 * (epoch ms), otherwise the delay tier for its remaining wait, with the delay headers.
 */
export function routeRecord(
  record: OutgoingRecord,
  now: number,
): { topic: string; headers: Record<string, string> } {
  const headers = { ...record.headers };
  if (record.notBefore === undefined || record.notBefore <= now)
    return { topic: record.topic, headers };
  return {
    topic: tierFor(record.notBefore - now).topic,
    headers: {
      ...headers,
      [delayHeaders.target]: record.topic,
      [delayHeaders.due]: String(record.notBefore),
      [delayHeaders.enqueued]: String(now),
    },
  };
}

export interface DelayForwarderOptions {
  settings: ConsumerSettings;
  /** Consumer group of the forwarders (default `<topicPrefix>media-scheduler`). */
  group?: string;
  /** Publishes with acks=all; rejects when the brokers did not acknowledge. */
  send(topicMessages: TopicMessages[]): Promise<void>;
}

export interface DelayForwarder {
  /** Stops forwarding; what was not forwarded stays uncommitted for the next forwarder. */
  close(): Promise<void>;
}

interface ForwarderState {
  kafka: Kafka;
  log: Logger;
  options: DelayForwarderOptions;
  group: string;
  prefix: string;
  tierByTopic: Map<string, number>;
  consumer: Consumer;
  /** Paused partitions (`topic:partition`) → the timer that resumes them. */
  waits: Map<string, { timer: NodeJS.Timeout; topic: string; partition: number }>;
  /** Replaces the consumer when it goes silent (consumerStallMs). */
  stall: StallWatch;
  /** Replaces the consumer (a silent one, or one kafkajs gave up). */
  replacer: ConsumerReplacer;
  stopping: boolean;
}

/** Starts the forwarder of the delay topics (see the comment at the top of this module). */
export async function startDelayForwarder(
  kafka: Kafka,
  log: Logger,
  options: DelayForwarderOptions,
): Promise<DelayForwarder> {
  const { settings } = options;
  const prefix = settings.topicPrefix;
  const group = options.group ?? `${prefix}media-scheduler`;
  const forwarderLog = log.child({ component: 'kafka-delay', group });
  const s: ForwarderState = {
    kafka,
    log: forwarderLog,
    options,
    group,
    prefix,
    tierByTopic: new Map(delayTiers.map((t) => [prefix + t.topic, t.ms])),
    consumer: newConsumer(kafka, settings, group),
    waits: new Map(),
    stall: startStallWatch(consumerStallMs(settings), (reason) => s.replacer.replace(reason)),
    replacer: forwarderReplacer(() => s, forwarderLog, settings),
    stopping: false,
  };
  try {
    await runConsumer(s);
  } catch (error) {
    s.stall.stop();
    await s.consumer.disconnect().catch(() => undefined);
    throw asBusUnavailable(error, `start the delay forwarder (group ${group})`);
  }
  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= (async () => {
        s.stopping = true;
        s.stall.stop();
        clearWaits(s, false);
        // A replacement under way disconnects the consumer it starts once it sees `stopping`.
        await settings.disconnect(s.consumer, 'delay forwarder disconnect');
      })()),
  };
}

function newConsumer(kafka: Kafka, settings: ConsumerSettings, group: string): Consumer {
  return kafka.consumer({
    groupId: group,
    sessionTimeout: settings.sessionTimeoutMs,
    heartbeatInterval: settings.heartbeatIntervalMs,
    rebalanceTimeout: settings.rebalanceTimeoutMs,
    maxWaitTimeInMs: settings.maxWaitTimeMs,
    allowAutoTopicCreation: false,
    ...CONSUMER_RECOVERY,
    // Each record waits for its commit, and kafkajs 2.2.4 sends a commit refused with "not the
    // correct coordinator" to the same broker again until its tries run out: with the job
    // consumers' 30 tries, deferred callbacks waited 2 min 13 s behind one such commit in the
    // cluster drill. 10 tries (about 35 s) end it sooner; a fetch loop given up is restarted by
    // kafkajs, and one that goes silent is replaced (startStallWatch).
    retry: { retries: 10 },
  });
}

/** Connects `s.consumer`, subscribes it to the delay topics and runs it. */
async function runConsumer(s: ForwarderState): Promise<void> {
  const { consumer } = s;
  s.stall.watch(consumer);
  // A rejoin reads every partition it is given from the committed offset, which is the head
  // each wait was for: drop the waits (and their pauses) and let the heads be judged again.
  consumer.on(consumer.events.GROUP_JOIN, () => {
    if (consumer === s.consumer) clearWaits(s, true);
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    s.log.error('kafka.consumer_crashed', { error: payload.error, restart: payload.restart });
    // kafkajs restarts a consumer after a retriable crash; after any other the forwarder
    // replaces it, or the scheduled records of every process would wait for a restart.
    if (!payload.restart && consumer === s.consumer)
      s.replacer.replace('the consumer crashed and kafkajs gave it up');
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [...s.tierByTopic.keys()], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: delayTiers.length,
    eachMessage: (payload) => forward(s, consumer, payload),
  });
}

/**
 * Drops the consumer and starts a new one in the group; what the old one had not committed is
 * read again by the group.
 */
function forwarderReplacer(
  s: () => ForwarderState,
  log: Logger,
  settings: ConsumerSettings,
): ConsumerReplacer {
  return createReplacer({
    log,
    disconnect: settings.disconnect,
    retryMs: settings.redeliveryDelayMs,
    stopping: () => s().stopping,
    current: () => s().consumer,
    onReplace: () => clearWaits(s(), false),
    startNext: async () => {
      const state = s();
      state.consumer = newConsumer(state.kafka, settings, state.group);
      await runConsumer(state);
    },
  });
}

/** Forwards one record of `consumer` (the one that read it, which a replacement may follow). */
async function forward(
  s: ForwarderState,
  consumer: Consumer,
  payload: EachMessagePayload,
): Promise<void> {
  if (s.stopping) return;
  const { topic, partition, message } = payload;
  const headers = headersToStrings(message.headers);
  const target = headers[delayHeaders.target];
  const due = Number(headers[delayHeaders.due]);
  const enqueued = Number(headers[delayHeaders.enqueued]);
  if (!target || !Number.isFinite(due) || !Number.isFinite(enqueued)) {
    // Only a foreign producer writes such a record; there is nowhere to forward it.
    s.log.error('kafka.delay_record_invalid', { topic, partition, offset: message.offset });
    return commit(s, consumer, payload);
  }
  const now = Date.now();
  const releaseAt = Math.min(due, enqueued + (s.tierByTopic.get(topic) ?? 0));
  if (releaseAt > now) return waitAt(s, consumer, payload, releaseAt);

  const next = routeRecord({ topic: target, key: '', value: Buffer.alloc(0), notBefore: due }, now);
  const out: Message = {
    key: message.key,
    value: message.value,
    headers:
      next.topic === target
        ? Object.fromEntries(Object.entries(headers).filter(([name]) => !STRIPPED.has(name)))
        : { ...headers, ...next.headers },
  };
  try {
    await s.options.send([{ topic: s.prefix + next.topic, messages: [out] }]);
  } catch (error) {
    s.log.warn('kafka.delay_forward_failed', { topic, partition, offset: message.offset, error });
    return waitAt(s, consumer, payload, Date.now() + s.options.settings.redeliveryDelayMs);
  }
  await commit(s, consumer, payload);
}

async function commit(
  s: ForwarderState,
  consumer: Consumer,
  { topic, partition, message }: EachMessagePayload,
) {
  try {
    const offset = (BigInt(message.offset) + 1n).toString();
    await consumer.commitOffsets([{ topic, partition, offset }]);
  } catch (error) {
    // Left uncommitted, the record is forwarded again later: consumers are idempotent.
    s.log.warn('kafka.delay_commit_failed', { topic, partition, offset: message.offset, error });
  }
}

/** Holds the partition at this record until `at` (epoch ms), without holding a handler. */
function waitAt(
  s: ForwarderState,
  consumer: Consumer,
  { topic, partition, message }: EachMessagePayload,
  at: number,
) {
  // A replaced consumer's record is read again by the group from the committed offset.
  if (consumer !== s.consumer) return;
  const tp = [{ topic, partitions: [partition] }];
  try {
    // kafkajs drops the rest of a batch whose partition has a pending seek, so this record
    // is the next one read from the partition.
    consumer.pause(tp);
    consumer.seek({ topic, partition, offset: message.offset });
  } catch (error) {
    // The consumer is restarting: it reads again from the committed offset anyway.
    return s.log.warn('kafka.delay_wait_failed', { topic, partition, error });
  }
  const id = `${topic}:${partition}`;
  clearTimeout(s.waits.get(id)?.timer);
  const timer = setTimeout(
    () => {
      s.waits.delete(id);
      if (!s.stopping) resume(s, topic, partition);
    },
    Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())),
  );
  s.waits.set(id, { timer, topic, partition });
}

function clearWaits(s: ForwarderState, resumeThem: boolean): void {
  for (const { timer, topic, partition } of s.waits.values()) {
    clearTimeout(timer);
    if (resumeThem) resume(s, topic, partition);
  }
  s.waits.clear();
}

function resume(s: ForwarderState, topic: string, partition: number): void {
  try {
    s.consumer.resume([{ topic, partitions: [partition] }]);
  } catch {
    // Restarting: the consumer starts unpaused.
  }
}
