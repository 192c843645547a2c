import type { Kafka } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import { busyAwareAssigner } from './kafka-assigner.ts';
import { withDeadline } from './kafka-support.ts';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface RebalanceNudge {
  /** Makes the group rebalance soon; requests while one runs are served by one more. */
  request(reason: string): void;
  /** Waits for a nudge under way (bounded) and takes no more requests. */
  close(): Promise<void>;
}

/**
 * kafkajs has no call that makes a member rejoin its group: a rebalance starts only when a member
 * joins or leaves. So a member that wants one (it began to stop, or a job of its drain ended, and
 * its waiting records should move now, not when it leaves) has a short-lived member join the
 * group and leave again. That member announces only the busy-aware assigner and takes nothing;
 * every real member rejoins at its next heartbeat and reports its load, and the leader assigns
 * anew (kafka-assigner.ts). The cost is two quick rebalances, during which running jobs go on.
 */
export function createRebalanceNudge(
  kafka: Kafka,
  log: Logger,
  options: {
    group: string;
    topics: readonly string[];
    sessionTimeoutMs: number;
    heartbeatIntervalMs: number;
    rebalanceTimeoutMs: number;
    maxWaitTimeMs: number;
    /** Least time between the end of one nudge and the start of the next, ms (default 3000). */
    minGapMs?: number;
  },
): RebalanceNudge {
  let running: Promise<void> | undefined;
  let again: string | undefined;
  let closed = false;
  const run = (reason: string): void => {
    running = nudgeOnce(kafka, log, options, reason)
      .catch((error: unknown) => log.warn('kafka.rebalance_nudge_failed', { reason, error }))
      // Rebalances back to back (a nudge leaving, the next joining) can exhaust kafkajs's join
      // retries and crash a member: the next one waits until the group has settled a while.
      .then(() => (closed ? undefined : sleep(options.minGapMs ?? 3000)))
      .finally(() => {
        running = undefined;
        const next = again;
        again = undefined;
        if (next !== undefined && !closed) run(next);
      });
  };
  return {
    request(reason) {
      if (closed) return;
      if (running) again = reason;
      else run(reason);
    },
    async close() {
      closed = true;
      again = undefined;
      await running;
    },
  };
}

async function nudgeOnce(
  kafka: Kafka,
  log: Logger,
  options: Parameters<typeof createRebalanceNudge>[2],
  reason: string,
): Promise<void> {
  const started = performance.now();
  const consumer = kafka.consumer({
    groupId: options.group,
    partitionAssigners: [
      busyAwareAssigner(() => ({
        slots: 0,
        running: 0,
        busy: [],
        waiting: {},
        stopping: false,
        nudge: true,
      })),
    ],
    sessionTimeout: options.sessionTimeoutMs,
    heartbeatInterval: options.heartbeatIntervalMs,
    rebalanceTimeout: options.rebalanceTimeoutMs,
    maxWaitTimeInMs: options.maxWaitTimeMs,
    allowAutoTopicCreation: false,
  });
  const joined = new Promise<void>((resolve) => {
    consumer.on(consumer.events.GROUP_JOIN, () => resolve());
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...options.topics] });
    // It is assigned nothing; were it given records anyway, it must never resolve or commit them.
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async () => {},
    });
    await withDeadline(joined, Date.now() + options.rebalanceTimeoutMs, 'rebalance nudge join');
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
  log.info('kafka.rebalance_nudged', { reason, ms: Math.round(performance.now() - started) });
}
