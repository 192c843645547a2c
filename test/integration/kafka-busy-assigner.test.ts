import { expect } from 'chai';
import { createKafkaBus, type KafkaBus } from '../../services/core/bus/kafka-bus.ts';
import { topics, type Subscription } from '../../services/core/bus/event-bus.ts';
import { createLogger } from '../../services/core/observability/logger.ts';
import { brokers, newGroup, newPrefix, sleep, until } from '../support/kafka-test-names.ts';

/** A job that takes `ms` unless its record is taken back. */
const work = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    });
  });

describe('Kafka: the busy-aware assigner (real broker, bus level)', function () {
  this.timeout(240_000);
  const lines: string[] = [];
  const closers: Array<() => Promise<void>> = [];
  afterEach(async function () {
    await Promise.allSettled(closers.reverse().map((c) => c()));
    closers.length = 0;
    if (this.currentTest?.state === 'failed') console.error(lines.slice(-80).join('\n'));
    lines.length = 0;
  });

  const newBus = (prefix: string, name: string, numPartitions = 12): KafkaBus => {
    const bus = createKafkaBus({
      brokers: brokers(),
      clientId: name,
      topicPrefix: prefix,
      numPartitions,
      sessionTimeoutMs: 6000,
      maxWaitTimeMs: 500,
      logger: createLogger({
        level: 'info',
        base: { member: name },
        write: (line) => lines.push(line),
      }),
    });
    closers.push(() => bus.close());
    return bus;
  };

  it('a member joining or stopping aborts no running record; waiting ones move to free slots', async () => {
    const prefix = newPrefix();
    const group = newGroup();
    const started = new Map<string, string[]>();
    const ended: string[] = [];
    const aborted: string[] = [];
    const running = { a: 0, b: 0 };
    const JOB_MS = 6000;
    const subscribe = async (bus: KafkaBus, name: 'a' | 'b'): Promise<Subscription> =>
      bus.subscribe({
        group,
        topics: [topics.transcodeRequests],
        fromBeginning: true,
        concurrency: 2,
        handler: async (record, { signal }) => {
          started.set(record.key, [...(started.get(record.key) ?? []), name]);
          running[name] += 1;
          try {
            await work(JOB_MS, signal);
            ended.push(record.key);
          } catch (error) {
            aborted.push(record.key);
            throw error;
          } finally {
            running[name] -= 1;
          }
        },
      });
    const a = newBus(prefix, 'a');
    const subA = await subscribe(a, 'a');
    const keys = Array.from({ length: 10 }, (_, i) => `job-${i}`);
    await a.publish(
      keys.map((key) => ({ topic: topics.transcodeRequests, key, value: Buffer.from(key) })),
    );
    await until(() => running.a === 2, 20_000, 'a to run two');
    const b = newBus(prefix, 'b');
    const joinAt = Date.now();
    await subscribe(b, 'b');
    await until(() => running.b > 0, 15_000, 'b to start a waiting record');
    const firstOnB = Date.now() - joinAt;
    await sleep(1000);
    const closing = subA.close(60_000);
    await until(() => ended.length === keys.length, 120_000, 'every record to end');
    await closing;
    expect(aborted, 'aborted records').to.deep.equal([]);
    for (const key of keys) expect(started.get(key), key).to.have.length(1);
    console.log(
      `      b's first start ${firstOnB} ms after it began to subscribe; a ran ${[...started.values()].filter((w) => w[0] === 'a').length}, b ${[...started.values()].filter((w) => w[0] === 'b').length}`,
    );
  });
});

describe('Kafka: a waiting record whose work would begin during a rebalance', function () {
  this.timeout(120_000);
  const lines: string[] = [];
  const closers: Array<() => Promise<void>> = [];
  afterEach(async function () {
    await Promise.allSettled(closers.reverse().map((c) => c()));
    closers.length = 0;
    if (this.currentTest?.state === 'failed') console.error(lines.slice(-80).join('\n'));
    lines.length = 0;
  });

  it('begins only once the assignment is known: moved, it never began on the member it left', async () => {
    const prefix = newPrefix();
    const group = newGroup();
    // a's one work slot is taken (by the test) until a tells a rebalance that its record waits.
    let slotFree = false;
    let freeSlot: () => void = () => undefined;
    const slot = new Promise<void>((resolve) => (freeSlot = resolve));
    let bJoining = false;
    const newBus = (name: string): KafkaBus => {
      const bus = createKafkaBus({
        brokers: brokers(),
        clientId: name,
        topicPrefix: prefix,
        numPartitions: 4,
        sessionTimeoutMs: 6000,
        maxWaitTimeMs: 500,
        logger: createLogger({
          level: 'debug',
          base: { member: name },
          write: (line) => {
            lines.push(line);
            // a's JoinGroup for b's arrival: its record is reported waiting; the slot frees now,
            // before the assignment comes back.
            if (name === 'a' && bJoining && line.includes('"kafka.join_load"') && !slotFree) {
              slotFree = true;
              freeSlot();
            }
          },
        }),
      });
      closers.push(() => bus.close());
      return bus;
    };
    const began: string[] = [];
    const moved: string[] = [];
    const ended: string[] = [];
    const a = newBus('a');
    await a.subscribe({
      group,
      topics: [topics.transcodeRequests],
      fromBeginning: true,
      concurrency: 1,
      freeForWork: () => (slotFree ? 1 : 0),
      handler: async (record, delivery) => {
        delivery.waitOnly();
        await slot;
        try {
          await delivery.begin();
          delivery.signal.throwIfAborted();
        } catch (error) {
          moved.push(record.key);
          throw error;
        }
        began.push(`${record.key}@a`);
        await work(2000, delivery.signal);
        ended.push(record.key);
      },
    });
    await a.publish([{ topic: topics.transcodeRequests, key: 'k0', value: Buffer.from('k0') }]);
    await until(() => lines.some((l) => l.includes('"kafka.join_load"')), 20_000, 'a to join');
    await sleep(2000); // k0 reaches a and waits for the slot
    const b = newBus('b');
    bJoining = true;
    await b.subscribe({
      group,
      topics: [topics.transcodeRequests],
      fromBeginning: true,
      concurrency: 1,
      handler: async (record, delivery) => {
        await delivery.begin();
        began.push(`${record.key}@b`);
        await work(500, delivery.signal);
        ended.push(record.key);
      },
    });
    await until(() => ended.includes('k0'), 30_000, 'k0 to end');
    expect(slotFree, 'the slot freed during the rebalance').to.equal(true);
    expect(moved, 'moved from a').to.deep.equal(['k0']);
    expect(began, 'where its work began').to.deep.equal(['k0@b']);
  });
});

describe('Kafka: records waiting behind a running one in a kept partition', function () {
  this.timeout(120_000);
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await Promise.allSettled(closers.reverse().map((c) => c()));
    closers.length = 0;
  });

  it('are not skipped when their member stops: they run once, on the member that takes over', async () => {
    const prefix = newPrefix();
    const group = newGroup();
    const started: string[] = [];
    const newBus = (name: string): KafkaBus => {
      const bus = createKafkaBus({
        brokers: brokers(),
        clientId: name,
        topicPrefix: prefix,
        numPartitions: 1,
        sessionTimeoutMs: 6000,
        maxWaitTimeMs: 500,
        logger: createLogger({ level: 'silent' }),
      });
      closers.push(() => bus.close());
      return bus;
    };
    const subscribe = (bus: KafkaBus, name: string): Promise<Subscription> =>
      bus.subscribe({
        group,
        topics: [topics.transcodeRequests],
        fromBeginning: true,
        concurrency: 1,
        handler: async (record, { signal }) => {
          started.push(`${record.key}@${name}`);
          await work(10_000, signal);
        },
      });
    const a = newBus('a');
    const subA = await subscribe(a, 'a');
    const keys = ['r0', 'r1', 'r2'];
    await a.publish(
      keys.map((key) => ({ topic: topics.transcodeRequests, key, value: Buffer.from(key) })),
    );
    await until(() => started.length === 1, 20_000, 'a to start the first record');
    const b = newBus('b');
    await subscribe(b, 'b');
    await sleep(1000);
    await subA.close(30_000);
    await until(() => started.length === 3, 30_000, 'the waiting records to run on b');
    await sleep(1000);
    expect(started).to.deep.equal(['r0@a', 'r1@b', 'r2@b']);
  });
});
