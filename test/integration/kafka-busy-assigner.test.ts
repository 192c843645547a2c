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

const lines: string[] = [];
const closers: Array<() => Promise<void>> = [];
/** A bus whose log lines are kept (and shown if the test fails), each also given to `onLine`. */
const newBus = (
  prefix: string,
  name: string,
  numPartitions = 12,
  onLine?: (line: string) => void,
): KafkaBus => {
  const bus = createKafkaBus({
    brokers: brokers(),
    clientId: name,
    topicPrefix: prefix,
    numPartitions,
    sessionTimeoutMs: 6000,
    maxWaitTimeMs: 500,
    logger: createLogger({
      level: onLine ? 'debug' : 'info',
      base: { member: name },
      write: (line) => {
        lines.push(line);
        onLine?.(line);
      },
    }),
  });
  closers.push(() => bus.close());
  return bus;
};

describe('Kafka: the busy-aware assigner (real broker, bus level)', function () {
  this.timeout(240_000);
  afterEach(async function () {
    await Promise.allSettled(closers.reverse().map((c) => c()));
    closers.length = 0;
    if (this.currentTest?.state === 'failed') console.error(lines.slice(-80).join('\n'));
    lines.length = 0;
  });

  describesMemberJoiningStoppingAborts();

  describesBeginsOnlyOnceAssignment();

  describesIdleWatchSlotFreeing();
});

function describesMemberJoiningStoppingAborts(): void {
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
}

function describesBeginsOnlyOnceAssignment(): void {
  it('begins only once the assignment is known: moved, it never began on the member it left', async () => {
    const prefix = newPrefix();
    const group = newGroup();
    // One partition, two members: the one that gets the record (its holder) has its one work
    // slot taken (by the test), the other has a free one, so the holder's crowd watch asks for
    // a rebalance that moves the record. The holder's slot frees the moment it tells that
    // rebalance its record waits (its join_load line), before the assignment comes back.
    const members = new Map<string, { slotFree: boolean; free: () => void; slot: Promise<void> }>();
    let holder: string | undefined;
    const began: string[] = [];
    const moved: string[] = [];
    const ended: string[] = [];
    const member = async (name: string): Promise<void> => {
      let free: () => void = () => undefined;
      const slot = new Promise<void>((resolve) => (free = resolve));
      const m = { slotFree: false, free, slot };
      members.set(name, m);
      const bus = newBus(prefix, name, 1, (line) => {
        const reportsWaiting = line.includes('"kafka.join_load"') && line.includes('"waiting":1');
        if (name === holder && reportsWaiting && !m.slotFree) {
          m.slotFree = true;
          m.free();
        }
      });
      await bus.subscribe({
        group,
        topics: [topics.transcodeRequests],
        fromBeginning: true,
        concurrency: 1,
        freeForWork: () => (name !== holder || m.slotFree ? 1 : 0),
        handler: async (record, delivery) => {
          holder ??= name;
          delivery.waitOnly();
          if (name === holder) await m.slot;
          try {
            await delivery.begin();
            delivery.signal.throwIfAborted();
          } catch (error) {
            moved.push(`${record.key}@${name}`);
            throw error;
          }
          began.push(`${record.key}@${name}`);
          await work(500, delivery.signal);
          ended.push(record.key);
        },
      });
    };
    await member('a');
    await member('b');
    const joined = (name: string): boolean =>
      lines.some((l) => l.includes('"kafka.group_joined"') && l.includes(`"member":"${name}"`));
    await until(() => joined('a') && joined('b'), 20_000, 'both members to join');
    await sleep(1000);
    const publisher = newBus(prefix, 'publisher', 1);
    await publisher.publish([
      { topic: topics.transcodeRequests, key: 'k0', value: Buffer.from('k0') },
    ]);
    await until(() => ended.includes('k0'), 30_000, 'k0 to end');
    const other = holder === 'a' ? 'b' : 'a';
    expect(
      members.get(holder ?? '')?.slotFree,
      "the holder's slot freed during a rebalance",
    ).to.equal(true);
    expect(moved, 'moved').to.deep.equal([`k0@${holder}`]);
    expect(began, 'where its work began').to.deep.equal([`k0@${other}`]);
  });
}

function describesIdleWatchSlotFreeing(): void {
  it('the idle watch: a slot freeing between rebalances takes a record waiting on another member', async () => {
    const prefix = newPrefix();
    const group = newGroup();
    // One partition. a holds its record, whose handler only waits, until the record moves; b
    // joins with no room, so the join leaves the record with a. a's crowd watch asks for
    // rebalances at about 3, 9 and 21 s and then waits 24 s; b's slot frees after a's third,
    // so only b's idle watch (it reads the group's commits, sees the partition marked queued and
    // asks for a rebalance) can bring the record over within seconds; without it b waits for a's
    // fourth.
    const nudges = (member: string, reason: string): number =>
      lines.filter(
        (l) =>
          l.includes('"kafka.rebalance_nudged"') &&
          l.includes(`"member":"${member}"`) &&
          l.includes(reason),
      ).length;
    const started: string[] = [];
    const moved: string[] = [];
    let bFree = false;
    const subscribe = (bus: KafkaBus, name: string, free: () => number): Promise<Subscription> =>
      bus.subscribe({
        group,
        topics: [topics.transcodeRequests],
        fromBeginning: true,
        concurrency: 1,
        freeForWork: free,
        handler: async (record, delivery) => {
          started.push(`${record.key}@${name}`);
          if (name === 'b') return;
          delivery.waitOnly();
          await new Promise<void>((resolve) =>
            delivery.signal.addEventListener('abort', () => resolve()),
          );
          moved.push(`${record.key}@${name}`);
          delivery.signal.throwIfAborted();
        },
      });
    const a = newBus(prefix, 'a', 1, () => undefined);
    await subscribe(a, 'a', () => 0);
    await a.publish([{ topic: topics.transcodeRequests, key: 'k0', value: Buffer.from('k0') }]);
    await until(() => started.includes('k0@a'), 20_000, 'a to take k0');
    const b = newBus(prefix, 'b', 1, () => undefined);
    await subscribe(b, 'b', () => (bFree ? 1 : 0));
    const crowded = 'records wait while every slot is busy';
    await until(() => nudges('a', crowded) >= 3, 45_000, "a's third crowd nudge");
    // The nudge's member leaving is one more rebalance: b's slot frees once both have joined again.
    const nudged = lines.length;
    const joinedSince = (name: string): boolean =>
      lines
        .slice(nudged)
        .some((l) => l.includes('"kafka.group_joined"') && l.includes(`"member":"${name}"`));
    await until(() => joinedSince('a') && joinedSince('b'), 15_000, 'the group to settle');
    await sleep(500);
    bFree = true;
    const freedAt = Date.now();
    await until(() => started.includes('k0@b'), 12_000, 'b to take k0 after its slot freed');
    const tookMs = Date.now() - freedAt;
    const idleReason = 'a slot is free while records wait on another member';
    // Its nudge is logged once the short-lived member has left, after the move.
    await until(() => nudges('b', idleReason) > 0, 10_000, "b's idle nudge");
    expect(moved, 'taken from a').to.deep.equal(['k0@a']);
    expect(nudges('a', crowded), "a's crowd nudges").to.equal(3);
    console.log(`      b took k0 ${tookMs} ms after its slot freed`);
  });
}

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
