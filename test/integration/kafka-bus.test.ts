import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  createKafkaBus,
  type KafkaBus,
  type KafkaBusOptions,
} from '../../services/core/bus/kafka-bus.ts';
import {
  BusUnavailableError,
  topics,
  type BusRecord,
  type RecordHandler,
  type Subscription,
} from '../../services/core/bus/event-bus.ts';
import { createLogger } from '../../services/core/observability/logger.ts';
import { brokers, newGroup, newPrefix, sleep, until } from '../support/kafka-test-names.ts';

// A real broker (scripts/test-services/start-all.sh writes the env file). Never skipped: a
// missing broker is a failed run, not a green one. What only the Kafka bus does; what both buses
// promise is checked by the EventBus conformance suite (kafka-bus-conformance.test.ts).
const run = promisify(execFile);

async function kafkaCtl(command: 'stop' | 'start'): Promise<void> {
  const ctl = process.env.TEST_KAFKA_CTL;
  if (!ctl)
    throw new Error(
      'TEST_KAFKA_CTL is not set (the env file from scripts/test-services/start-all.sh sets it)',
    );
  await run('bash', [ctl, command], { env: process.env, timeout: 180_000 });
}

let logLines: string[] = [];
let closers: Array<() => Promise<void>> = [];
const newBus = (options: Partial<KafkaBusOptions> = {}): KafkaBus => {
  const bus = createKafkaBus({
    brokers: brokers(),
    clientId: 'kafka-bus-test',
    topicPrefix: newPrefix(),
    logger: createLogger({ level: 'warn', write: (line) => logLines.push(line) }),
    maxWaitTimeMs: 500,
    ...options,
  });
  closers.push(() => bus.close());
  return bus;
};
const subscribe = async (
  bus: KafkaBus,
  group: string,
  handler: RecordHandler,
  extra: { concurrency?: number } = {},
): Promise<Subscription> => {
  const sub = await bus.subscribe({
    group,
    topics: [topics.transcodeRequests],
    fromBeginning: true,
    handler,
    ...extra,
  });
  closers.push(() => sub.close(0));
  return sub;
};

describe('Kafka bus (real broker)', function () {
  before(() => {
    brokers();
  });

  afterEach(async function () {
    await Promise.allSettled(closers.reverse().map((close) => close()));
    closers = [];
    if (this.currentTest?.state === 'failed') console.error(logLines.slice(-60).join('\n'));
    logLines = [];
  });

  describesPublishSubscribeDeliversKey();

  describesTwoMembersGroupShare();

  describesHandlerHeartbeatsKeepsPartition();

  describesMemberJoiningLongHandler();

  describesPublishRejectsBusUnavailableErrorWithin();
});

function describesPublishSubscribeDeliversKey(): void {
  it('publish then subscribe delivers key, value bytes and headers, on topics ensureTopics created', async function () {
    this.timeout(30_000);
    const prefix = newPrefix();
    const bus = newBus({ topicPrefix: prefix });
    const report = await bus.ensureTopics();
    expect(report.map((t) => t.topic).sort()).to.deep.equal(
      Object.values(topics)
        .map((t) => prefix + t)
        .sort(),
    );
    expect(report.map((t) => [t.created, t.partitions])).to.deep.equal(
      report.map(() => [true, 12]),
    );
    const again = await newBus({ topicPrefix: prefix }).ensureTopics();
    expect(again.map((t) => [t.created, t.partitions])).to.deep.equal(
      report.map(() => [false, 12]),
    );

    const got: BusRecord[] = [];
    await subscribe(bus, newGroup(), async (record) => void got.push(record));
    const value = Buffer.from([0x00, 0x01, 0xfe, 0xff, 0x80]);
    await bus.publish([
      {
        topic: topics.transcodeRequests,
        key: 'job-1',
        value,
        headers: { 'ce-type': 'media.job.requested', note: 'é ✓' },
      },
    ]);
    await until(() => got.length >= 1, 15_000, 'the record');
    await sleep(500);
    expect(got).to.have.length(1);
    expect(got[0]?.topic).to.equal(topics.transcodeRequests);
    expect(got[0]?.key).to.equal('job-1');
    expect(Buffer.compare(got[0]?.value ?? Buffer.alloc(0), value)).to.equal(0);
    expect(got[0]?.headers).to.deep.equal({ 'ce-type': 'media.job.requested', note: 'é ✓' });
  });
}

function describesTwoMembersGroupShare(): void {
  it('two members of one group share the partitions and handle each record exactly once', async function () {
    this.timeout(40_000);
    const prefix = newPrefix();
    const a = newBus({ topicPrefix: prefix });
    const b = newBus({ topicPrefix: prefix });
    const group = newGroup();
    const handledBy = new Map<string, string[]>();
    const member =
      (name: string): RecordHandler =>
      async (record) => {
        handledBy.set(record.key, [...(handledBy.get(record.key) ?? []), name]);
      };
    await subscribe(a, group, member('a'), { concurrency: 2 });
    // Resolves once the group has rebalanced onto both members.
    await subscribe(b, group, member('b'));

    const keys = Array.from({ length: 30 }, (_, i) => `job-${i}`);
    await a.publish(
      keys.map((key) => ({ topic: topics.transcodeRequests, key, value: Buffer.from(key) })),
    );
    await until(() => handledBy.size === keys.length, 20_000, 'all 30 records');
    await sleep(1500);

    expect([...handledBy.keys()].sort()).to.deep.equal([...keys].sort());
    const twice = [...handledBy].filter(([, members]) => members.length !== 1);
    expect(twice, 'records handled more than once').to.deep.equal([]);
    const byMember = [...handledBy.values()].flat();
    expect(
      byMember.filter((m) => m === 'a').length,
      'records handled by member a',
    ).to.be.greaterThan(0);
    expect(
      byMember.filter((m) => m === 'b').length,
      'records handled by member b',
    ).to.be.greaterThan(0);
  });
}

function describesHandlerHeartbeatsKeepsPartition(): void {
  it('a handler that heartbeats keeps its partition past the session timeout', async function () {
    this.timeout(60_000);
    const sessionTimeoutMs = 6000;
    const prefix = newPrefix();
    const a = newBus({ sessionTimeoutMs, topicPrefix: prefix });
    const b = newBus({ sessionTimeoutMs, topicPrefix: prefix });
    const group = newGroup();
    let started = 0;
    let finished = 0;
    const aborted: unknown[] = [];
    const slow: RecordHandler = async (_record, delivery) => {
      started += 1;
      for (let second = 0; second < 10; second += 1) {
        await sleep(1000);
        await delivery.heartbeat();
      }
      if (delivery.signal.aborted) aborted.push(delivery.signal.reason);
      finished += 1;
    };
    await subscribe(a, group, slow);
    await subscribe(b, group, slow);

    await a.publish([
      { topic: topics.transcodeRequests, key: 'long-job', value: Buffer.from('x') },
    ]);
    await until(() => finished >= 1, 30_000, 'the slow handler to finish');
    // Had the member been dropped, the other member (or this one, rejoining) would get it again.
    await sleep(3000);
    expect(started, 'deliveries of the record').to.equal(1);
    expect(aborted).to.deep.equal([]);
  });

  it('a handler that runs past the session timeout without heartbeats keeps its record: the member heartbeats on its own', async function () {
    this.timeout(60_000);
    const sessionTimeoutMs = 6000;
    const prefix = newPrefix();
    const a = newBus({ sessionTimeoutMs, topicPrefix: prefix });
    const b = newBus({ sessionTimeoutMs, topicPrefix: prefix });
    const group = newGroup();
    let deliveries = 0;
    let aborted: boolean | undefined;
    const handler: RecordHandler = async (_record, delivery) => {
      deliveries += 1;
      await sleep(sessionTimeoutMs + 3000);
      aborted = delivery.signal.aborted;
    };
    await subscribe(a, group, handler);
    await subscribe(b, group, handler);
    await a.publish([
      { topic: topics.transcodeRequests, key: 'quiet-job', value: Buffer.from('x') },
    ]);
    await until(() => aborted !== undefined, 30_000, 'the quiet handler to finish');
    await sleep(3000);
    expect(aborted, 'signal of the handler').to.equal(false);
    expect(deliveries).to.equal(1);
  });
}

function describesMemberJoiningLongHandler(): void {
  it('a member joining while a long handler runs does not wait for it: the group rebalances at once and the record finishes once', async function () {
    this.timeout(60_000);
    const prefix = newPrefix();
    const a = newBus({ sessionTimeoutMs: 6000, topicPrefix: prefix });
    const b = newBus({ sessionTimeoutMs: 6000, topicPrefix: prefix });
    const group = newGroup();
    const handled: string[] = [];
    const finished: string[] = [];
    const handler =
      (name: string): RecordHandler =>
      async (record, delivery) => {
        handled.push(`${name}:${record.key}`);
        if (record.key === 'long') await sleep(8000);
        if (!delivery.signal.aborted) finished.push(`${name}:${record.key}`);
      };
    await subscribe(a, group, handler('a'));
    await a.publish([{ topic: topics.transcodeRequests, key: 'long', value: Buffer.from('x') }]);
    await until(() => handled.length === 1, 15_000, 'the long record to start');
    const joining = Date.now();
    await subscribe(b, group, handler('b'));
    expect(Date.now() - joining, 'time for b to join while a is busy (ms)').to.be.below(6000);

    const keys = Array.from({ length: 20 }, (_, i) => `after-${i}`);
    await a.publish(
      keys.map((key) => ({ topic: topics.transcodeRequests, key, value: Buffer.from(key) })),
    );
    await until(() => finished.length === 21, 30_000, 'every record to finish');
    await sleep(1500);
    expect(finished.filter((h) => h.endsWith(':long'))).to.have.length(1);
    expect(finished).to.have.length(21);
    expect(
      handled.some((h) => h.startsWith('b:')),
      'member b got partitions',
    ).to.equal(true);
  });
}

function describesPublishRejectsBusUnavailableErrorWithin(): void {
  it('publish rejects with BusUnavailableError within publishTimeoutMs while the broker is down, and works again after', async function () {
    this.timeout(120_000);
    if (!process.env.TEST_KAFKA_CTL)
      throw new Error(
        'TEST_KAFKA_CTL is not set (the env file from scripts/test-services/start-all.sh sets it)',
      );
    const publishTimeoutMs = 3000;
    const bus = newBus({ publishTimeoutMs });
    const record = (v: string): { topic: string; key: string; value: Buffer } => ({
      topic: topics.transcodeRequests,
      key: 'job-r',
      value: Buffer.from(v),
    });
    await bus.publish([record('before')]);
    expect(await bus.isReady()).to.equal(true);

    await kafkaCtl('stop');
    try {
      const start = Date.now();
      const error: unknown = await bus.publish([record('while-down')]).then(
        () => undefined,
        (e: unknown) => e,
      );
      const tookMs = Date.now() - start;
      expect(error).to.be.instanceOf(BusUnavailableError);
      expect(tookMs, 'time to reject (ms)').to.be.below(publishTimeoutMs + 1000);
      expect(await bus.isReady()).to.equal(false);
    } finally {
      await kafkaCtl('start');
    }

    // A restarted broker reloads every partition it holds (12 per topic) before it answers.
    let published = false;
    const end = Date.now() + 60_000;
    while (!published) {
      published = await bus.publish([record('after')]).then(
        () => true,
        (error: unknown) => {
          if (!(error instanceof BusUnavailableError) || Date.now() > end) throw error;
          return false;
        },
      );
    }
    expect(await bus.isReady()).to.equal(true);
    const got: string[] = [];
    await subscribe(bus, newGroup(), async (r) => void got.push(r.value.toString()));
    await until(() => got.includes('after'), 20_000, 'the record published after the restart');
    // A publish that timed out may still have landed: at-least-once, so compare distinct values.
    expect([...new Set(got.filter((v) => v !== 'while-down'))]).to.deep.equal(['before', 'after']);
  });
}
