// Scaling out and stopping workers on the real broker (issue 22), at the bus level: each member is
// its own Kafka client and consumer, as separate worker processes are, and takes jobs as a media
// worker does: up to its work (CPU) slots + `prefetch` records at once, each one first a download
// (a timer of 1 s, during which and after which, waiting for a work slot, it may move), then its
// work, a timer of fixed length in a work slot, which stops when its record is taken back. So the
// numbers are the scheduling's alone (who runs what, when): two workers on this 2-core machine
// would share its cores, and real encodes would measure that, not the assignment. Three
// scenarios in one run:
//   two-from-start   both members subscribed before the batch is published
//   scale-out        one member runs the batch; the second subscribes `joinAfter` seconds in
//   scale-then-stop  as scale-out, then the first member is stopped (close with a long grace)
// Reports per scenario: the makespan (publish to last end) and its ratio to two-from-start, the
// seconds of work thrown away by records aborted after their work began and run again (goal: 0),
// starts beyond one per record (a record moved before its work began starts again, losing only
// its download), and the longest time a record waited for work while a member had a free work
// slot (sampled every 50 ms; a member that is stopping has no free slot).
// Usage: npm run bench:scale-out -- [records=12] [jobSeconds=8] [slots=2] [joinAfter=4] [partitions=12] [rounds=3] [prefetch=2]
// (each round runs the three scenarios; which partitions a member gets changes from round to round)
// Needs KAFKA_BROKERS or TEST_KAFKA_BROKERS.
import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { createKafkaBus, type KafkaBus } from '../services/core/bus/kafka-bus.ts';
import { topics, type DeliveryContext, type Subscription } from '../services/core/bus/event-bus.ts';
import { createLogger } from '../services/core/observability/logger.ts';
import { createSemaphore, type Semaphore } from '../services/core/scheduling/semaphore.ts';

const records = Number(process.argv[2] ?? 12);
const jobMs = Number(process.argv[3] ?? 8) * 1000;
const slots = Number(process.argv[4] ?? 2);
const joinAfterMs = Number(process.argv[5] ?? 4) * 1000;
const partitions = Number(process.argv[6] ?? 12);
const rounds = Number(process.argv[7] ?? 3);
const prefetch = Number(process.argv[8] ?? 2);
const downloadMs = 1000;
const { Partitioners } = kafkajs;
const brokers = (process.env['KAFKA_BROKERS'] ?? process.env['TEST_KAFKA_BROKERS'] ?? '').split(
  ',',
);
if (!brokers[0]) throw new Error('set KAFKA_BROKERS or TEST_KAFKA_BROKERS');

type Scenario = 'two-from-start' | 'scale-out' | 'scale-then-stop';
/** Where a record is: to be taken, downloading, queued for a work slot, at work, done. */
type Stage = 'fetch' | 'download' | 'queued' | 'work' | 'done';

// The producer's partitioner, to tell which records share a partition.
const partitioner = Partitioners.DefaultPartitioner();
const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
  partitionId,
  leader: 0,
  replicas: [0],
  isr: [0],
  partitionErrorCode: 0,
}));
const partitionOf = (key: string): number =>
  partitioner({ topic: 'jobs', partitionMetadata, message: { key, value: null } });

interface Member {
  name: string;
  bus: KafkaBus;
  sub?: Subscription;
  /** Records whose work runs now. */
  running: number;
  /** Records taken but not at work yet (downloading, or waiting for a work slot). */
  notBegun: number;
  work: Semaphore;
  active: boolean;
}

interface Outcome {
  makespanMs: number;
  thrownAwayMs: number;
  extraStarts: number;
  longestHeldMs: number;
  /** When the longest wait began, ms after the batch was published. */
  longestHeldAtMs: number;
  /** The same, counting only records no record at work holds on their partition. */
  longestMovableMs: number;
  ranOn: Record<string, number>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves after `ms`, rejects when `signal` aborts first (the record was taken back). */
const timer = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new Error('taken back'));
    });
  });

/** What one scenario's members share: where each record is, and what its runs cost. */
interface Tally {
  /** Starts per record (a record taken back and taken again starts again). */
  started: Map<string, number>;
  stage: Map<string, Stage>;
  ended: Set<string>;
  ranOn: Record<string, number>;
  thrownAwayMs: number;
}

/** The longest waits the sampler has seen; see `sampleWaits`. */
interface Waits {
  longestHeldMs: number;
  longestHeldAtMs: number;
  heldSince: number | undefined;
  longestMovableMs: number;
  movableSince: number | undefined;
}

async function run(scenario: Scenario): Promise<Outcome> {
  const prefix = `bench-${randomUUID().slice(0, 8)}.`;
  const group = `bench-${randomUUID()}`;
  const tally: Tally = {
    started: new Map(),
    stage: new Map(),
    ended: new Set(),
    ranOn: {},
    thrownAwayMs: 0,
  };
  const subscribe = (m: Member): Promise<void> => subscribeMember(m, group, tally);
  const a = member('a', prefix);
  const b = member('b', prefix);
  await a.bus.ensureTopics();
  await subscribe(a);
  if (scenario === 'two-from-start') await subscribe(b);
  await sleep(2000); // every member has joined
  const keys = Array.from({ length: records }, (_, i) => `job-${i}`);
  const t0 = performance.now();
  await a.bus.publish(
    keys.map((key) => ({ topic: topics.transcodeRequests, key, value: Buffer.from(key) })),
  );
  const waits: Waits = {
    longestHeldMs: 0,
    longestHeldAtMs: 0,
    heldSince: undefined,
    longestMovableMs: 0,
    movableSince: undefined,
  };
  const sampler = setInterval(() => sampleWaits(waits, keys, tally.stage, [a, b], t0), 50);
  const steps = (async () => {
    if (scenario === 'two-from-start') return;
    await sleep(joinAfterMs);
    await subscribe(b);
    if (scenario !== 'scale-then-stop') return;
    await sleep(2000);
    a.active = false;
    await a.sub?.close(10 * jobMs);
  })();
  while (tally.ended.size < records) await sleep(50);
  const makespanMs = performance.now() - t0;
  clearInterval(sampler);
  await steps;
  await Promise.all([a, b].map((m) => m.bus.close()));
  const extraStarts = [...tally.started.values()].reduce((n, c) => n + c - 1, 0);
  return {
    makespanMs,
    thrownAwayMs: tally.thrownAwayMs,
    extraStarts,
    longestHeldMs: waits.longestHeldMs,
    longestHeldAtMs: waits.longestHeldAtMs,
    longestMovableMs: waits.longestMovableMs,
    ranOn: tally.ranOn,
  };
}

function member(name: string, prefix: string): Member {
  return {
    name,
    running: 0,
    notBegun: 0,
    work: createSemaphore(slots),
    active: false,
    bus: createKafkaBus({
      brokers,
      clientId: `bench-${name}`,
      topicPrefix: prefix,
      numPartitions: partitions,
      sessionTimeoutMs: 6000,
      maxWaitTimeMs: 500,
      logger: createLogger({ level: (process.env['BENCH_LOG_LEVEL'] ?? 'error') as 'error' }),
    }),
  };
}

/** Subscribes `m` to the jobs, taking them as a media worker does (see the top of the file). */
async function subscribeMember(m: Member, group: string, tally: Tally): Promise<void> {
  m.sub = await m.bus.subscribe({
    group,
    topics: [topics.transcodeRequests],
    fromBeginning: true,
    concurrency: slots + prefetch,
    freeForWork: () => m.work.size - m.work.inUse - m.notBegun,
    handler: (record, delivery) => takeJob(m, tally, record.key, delivery),
  });
  m.active = true;
}

/** One record on member `m`: its download, then its work in a work slot. */
async function takeJob(
  m: Member,
  tally: Tally,
  key: string,
  delivery: DeliveryContext,
): Promise<void> {
  const { signal } = delivery;
  const { started, stage } = tally;
  started.set(key, (started.get(key) ?? 0) + 1);
  // Its stage: downloading, queued for a work slot, at work (since `at`).
  const enter = (next: Stage): void => void stage.set(key, next);
  enter('download');
  let at = 0;
  m.notBegun += 1;
  try {
    delivery.waitOnly();
    await timer(downloadMs, signal);
    enter('queued');
    await m.work.use(signal, async () => {
      await delivery.begin();
      signal.throwIfAborted();
      enter('work');
      m.notBegun -= 1;
      m.running += 1;
      at = performance.now();
      try {
        await timer(jobMs, signal);
      } finally {
        m.running -= 1;
      }
    });
    enter('done');
    tally.ended.add(key);
    tally.ranOn[m.name] = (tally.ranOn[m.name] ?? 0) + 1;
  } catch (error) {
    if (stage.get(key) === 'work') tally.thrownAwayMs += performance.now() - at;
    else m.notBegun -= 1;
    enter('fetch');
    throw error;
  }
}

/** One sample (every 50 ms) of how long records have waited beside a free work slot. */
function sampleWaits(
  w: Waits,
  keys: string[],
  stage: Map<string, Stage>,
  members: Member[],
  t0: number,
): void {
  // A record waits for work: not taken yet, or downloaded and queued for a work slot. One
  // behind a record at work on its partition cannot move (one partition, one owner).
  const waiting = keys.filter((k) => {
    const at = stage.get(k) ?? 'fetch';
    return at === 'fetch' || at === 'queued';
  });
  const blocked = (k: string): boolean =>
    keys.some((j) => j !== k && partitionOf(j) === partitionOf(k) && stage.get(j) === 'work');
  const free = members.some((m) => m.active && m.running + m.notBegun < slots);
  const now = performance.now();
  if (waiting.length > 0 && free) w.heldSince ??= now;
  else w.heldSince = undefined;
  if (w.heldSince !== undefined && now - w.heldSince > w.longestHeldMs) {
    w.longestHeldMs = now - w.heldSince;
    w.longestHeldAtMs = w.heldSince - t0;
  }
  if (waiting.some((k) => !blocked(k)) && free) w.movableSince ??= now;
  else w.movableSince = undefined;
  if (w.movableSince !== undefined)
    w.longestMovableMs = Math.max(w.longestMovableMs, now - w.movableSince);
}

console.log(
  `scale-out bench: ${records} records of ${jobMs / 1000} s after a ${downloadMs / 1000} s download, ` +
    `${slots} work slots + ${prefetch} prefetched per member, ` +
    `${partitions} partitions, the second member joins ${joinAfterMs / 1000} s in`,
);
const worst = new Map<Scenario, Outcome>();
for (let round = 1; round <= rounds; round++) {
  const base = await run('two-from-start');
  for (const [scenario, o] of [
    ['two-from-start', base],
    ['scale-out', await run('scale-out')],
    ['scale-then-stop', await run('scale-then-stop')],
  ] as const) {
    console.log(
      `round ${round} ${scenario.padEnd(16)} makespan ${(o.makespanMs / 1000).toFixed(1)} s ` +
        `(x${(o.makespanMs / base.makespanMs).toFixed(2)} of two-from-start), thrown away ${(o.thrownAwayMs / 1000).toFixed(1)} s, ` +
        `extra starts ${o.extraStarts}, longest wait beside a free slot ${(o.longestHeldMs / 1000).toFixed(1)} s ` +
        `(from ${(o.longestHeldAtMs / 1000).toFixed(1)} s; ${(o.longestMovableMs / 1000).toFixed(1)} s for records not behind one at work on their partition), ` +
        `ran on ${JSON.stringify(o.ranOn)}`,
    );
    const w = worst.get(scenario);
    if (!w || o.longestHeldMs > w.longestHeldMs) worst.set(scenario, o);
  }
}
for (const [scenario, o] of worst)
  console.log(
    `worst ${scenario.padEnd(16)} longest wait beside a free slot ${(o.longestHeldMs / 1000).toFixed(1)} s`,
  );
