import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { startKafkaSubscription } from '../../services/core/bus/kafka-subscription.ts';
import { startKafkaTail } from '../../services/core/bus/kafka-tail.ts';
import { createDisconnect } from '../../services/core/bus/kafka-support.ts';
import { createKafkaBus } from '../../services/core/bus/kafka-bus.ts';
import { topics } from '../../services/core/bus/event-bus.ts';
import { createLogger } from '../../services/core/observability/logger.ts';
import { brokers, newGroup, newPrefix, sleep, until } from '../support/kafka-test-names.ts';
import { spoiledKafka, type Spoil } from '../support/spoiled-kafka.ts';

// A job subscription whose consumer goes silent (no fetch, heartbeat or join: a join stuck
// after a broker's restart left the notifier's callbacks waiting on CI) replaces it, and one
// that is only idle, or paused behind a full window, keeps its consumer (real broker).

const STALL_MS = 2000;
let closers: Array<() => Promise<void>> = [];
let log: string[] = [];

describe('Kafka subscription: a consumer that goes silent is replaced (real broker)', function () {
  this.timeout(60_000);
  afterEach(async function () {
    await Promise.allSettled(closers.reverse().map((close) => close()));
    closers = [];
    if (this.currentTest?.state === 'failed') console.error(log.slice(-60).join('\n'));
    log = [];
  });

  it('the first consumer never joins nor fetches: every record runs once, on its replacement', async () => {
    const run = await subscription('never fetches', { handleMs: 0 });
    await run.publish(3);
    await until(() => run.handled.length === 3, 30_000, 'the three records');
    await sleep(1000);
    expect([...run.handled].sort()).to.deep.equal(['r0', 'r1', 'r2']);
    expect(replacements()).to.have.length(1);
  });

  it('a sound consumer, idle for two stall limits and then paused behind a full window for more, is kept', async () => {
    // A window of 2 records and one slot: the partitions stay paused while each record runs.
    const run = await subscription(undefined, { handleMs: 800 });
    await sleep(2 * STALL_MS);
    await run.publish(6);
    await until(() => run.handled.length === 6, 40_000, 'the six records');
    expect(replacements()).to.deep.equal([]);
  });

  for (const spoil of ['never fetches', 'crashes, not restarted'] as const)
    it(`a tail whose first consumer ${spoil} reads what is published after it, by its replacement`, async () => {
      const { prefix, logger, bus, kafka } = await freshTopics();
      const read: string[] = [];
      const tail = await startKafkaTail(
        spoiledKafka(kafka, spoil),
        logger,
        {
          topicPrefix: prefix,
          group: newGroup(),
          maxWaitTimeMs: 200,
          disconnect: createDisconnect(logger, 5000),
          stallMs: STALL_MS,
        },
        {
          topics: [{ topic: topics.jobEvents, last: 10 }],
          handler: async (record) => void read.push(record.value.toString()),
          readyWithinMs: 5000,
        },
      );
      closers.push(() => tail.close());
      await bus.publish([{ topic: topics.jobEvents, key: 'k', value: Buffer.from('e0') }]);
      await until(() => read.length === 1, 30_000, 'the record read by the tail');
      expect(read).to.deep.equal(['e0']);
      expect(replacements()).to.have.length(1);
    });
});

function replacements(): string[] {
  return log.filter((line) => line.includes('kafka.consumer_replaced'));
}

/** A fresh topic set made by a bus, the test's logger, and a bare client for the reader. */
async function freshTopics(): Promise<{
  prefix: string;
  logger: ReturnType<typeof createLogger>;
  bus: ReturnType<typeof createKafkaBus>;
  kafka: kafkajs.Kafka;
}> {
  const prefix = newPrefix();
  const logger = createLogger({ level: 'info', write: (line) => log.push(line) });
  const bus = createKafkaBus({ brokers: brokers(), topicPrefix: prefix, logger });
  closers.push(() => bus.close());
  await bus.ensureTopics();
  const kafka = new kafkajs.Kafka({
    clientId: 'consumer-stall-test',
    brokers: brokers(),
    logLevel: kafkajs.logLevel.NOTHING,
  });
  return { prefix, logger, bus, kafka };
}

/** A subscription of a fresh topic set on a client whose first consumer is spoiled (or not). */
async function subscription(
  spoil: Spoil | undefined,
  { handleMs }: { handleMs: number },
): Promise<{ handled: string[]; publish(n: number): Promise<void> }> {
  const { prefix, logger, bus, kafka } = await freshTopics();
  const handled: string[] = [];
  const sub = await startKafkaSubscription(
    spoil ? spoiledKafka(kafka, spoil) : kafka,
    logger,
    {
      topicPrefix: prefix,
      sessionTimeoutMs: 6000,
      heartbeatIntervalMs: 500,
      rebalanceTimeoutMs: 6000,
      maxWaitTimeMs: 200,
      redeliveryDelayMs: 500,
      abortWaitMs: 1000,
      windowRecords: 2,
      disconnect: createDisconnect(logger, 5000),
      stallMs: STALL_MS,
    },
    {
      group: newGroup(),
      topics: [topics.transcodeRequests],
      fromBeginning: true,
      concurrency: 1,
      handler: async (record) => {
        await sleep(handleMs);
        handled.push(record.value.toString());
      },
    },
  );
  closers.push(() => sub.close(0));
  return {
    handled,
    publish: async (n) => {
      for (let i = 0; i < n; i++)
        await bus.publish([
          { topic: topics.transcodeRequests, key: 'k', value: Buffer.from(`r${i}`) },
        ]);
    },
  };
}
