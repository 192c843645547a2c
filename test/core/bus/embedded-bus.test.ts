import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';
import type { BusRecord } from '../../../services/core/bus/event-bus.ts';
import { HandBack } from '../../../services/core/bus/hand-back.ts';

const rec = (key: string): { topic: string; key: string; value: Buffer } => ({
  topic: 't1',
  key,
  value: Buffer.from(key),
});
const until = async (check: () => boolean, ms = 3000): Promise<void> => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('embedded bus (SQLite)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-bus-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('delivers each record once per group, with key, value and headers', async () => {
    const bus = createEmbeddedBus({ path: join(dir, 'b.sqlite') });
    await bus.publish([{ ...rec('a'), headers: { h: '1' } }, rec('b')]);
    const g1: BusRecord[] = [];
    const g2: BusRecord[] = [];
    await bus.subscribe({
      group: 'g1',
      topics: ['t1'],
      fromBeginning: true,
      handler: async (r) => void g1.push(r),
    });
    await bus.subscribe({
      group: 'g2',
      topics: ['t1'],
      fromBeginning: true,
      concurrency: 4,
      handler: async (r) => void g2.push(r),
    });
    await bus.publish([rec('c')]);
    await until(() => g1.length === 3 && g2.length === 3);
    expect(g1.map((r) => r.key)).to.deep.equal(['a', 'b', 'c']);
    expect(g1[0]?.headers).to.deep.equal({ h: '1' });
    expect(g1[0]?.value.toString()).to.equal('a');
    await bus.close();
  });

  it("reports a group's backlog as its lag (partition 0), down to 0 once it is done", async function () {
    this.timeout(15_000);
    const bus = createEmbeddedBus({ path: join(dir, 'b.sqlite') });
    const lag: number[] = [];
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    await bus.subscribe({
      group: 'workers',
      topics: ['t1'],
      fromBeginning: true,
      concurrency: 1,
      handler: () => gate,
      onLag: (topic, partition, records) => {
        expect([topic, partition]).to.deep.equal(['t1', 0]);
        lag.push(records);
      },
    });
    await bus.publish(['a', 'b', 'c', 'd', 'e'].map(rec));
    // One record runs, four wait: all five are not finished.
    await until(() => lag.at(-1) === 5, 5000);
    release();
    await until(() => lag.at(-1) === 0, 5000);
    await bus.close();
  });

  it('a group that starts late without fromBeginning sees only new records', async () => {
    const bus = createEmbeddedBus({ path: join(dir, 'b.sqlite') });
    await bus.publish([rec('old')]);
    const seen: string[] = [];
    await bus.subscribe({
      group: 'late',
      topics: ['t1'],
      handler: async (r) => void seen.push(r.key),
    });
    await bus.publish([rec('new')]);
    await until(() => seen.length === 1);
    expect(seen).to.deep.equal(['new']);
    await bus.close();
  });

  it('redelivers a record whose handler rejected', async () => {
    const bus = createEmbeddedBus({ path: join(dir, 'b.sqlite'), redeliveryDelayMs: 20 });
    let calls = 0;
    await bus.subscribe({
      group: 'g',
      topics: ['t1'],
      fromBeginning: true,
      handler: async () => {
        calls += 1;
        if (calls === 1) throw new Error('not now');
      },
    });
    await bus.publish([rec('x')]);
    await until(() => calls === 2);
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).to.equal(2);
    await bus.close();
  });

  it('keeps unfinished records across a restart and does not redeliver finished ones', async () => {
    const path = join(dir, 'b.sqlite');
    const first = createEmbeddedBus({ path });
    await first.publish([rec('done'), rec('unfinished')]);
    const handled: string[] = [];
    await first.subscribe({
      group: 'g',
      topics: ['t1'],
      fromBeginning: true,
      handler: async (r, ctx) => {
        handled.push(r.key);
        if (r.key === 'unfinished')
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        if (ctx.signal.aborted) throw new HandBack();
      },
    });
    await until(() => handled.length === 2);
    await first.close();

    const second = createEmbeddedBus({ path });
    const again: string[] = [];
    await second.subscribe({
      group: 'g',
      topics: ['t1'],
      fromBeginning: true,
      handler: async (r) => void again.push(r.key),
    });
    await until(() => again.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(again).to.deep.equal(['unfinished']);
    await second.close();
  });

  it('never starts a record while an earlier record of its key is running or handed back', async () => {
    const bus = createEmbeddedBus({ path: join(dir, 'b.sqlite'), redeliveryDelayMs: 100 });
    const log: string[] = [];
    let a1Calls = 0;
    await bus.subscribe({
      group: 'g',
      topics: ['t1'],
      fromBeginning: true,
      concurrency: 2,
      handler: async (r) => {
        const name = r.value.toString();
        log.push(`start ${name}`);
        await new Promise((resolve) => setTimeout(resolve, 30));
        if (name === 'a1' && ++a1Calls === 1) {
          log.push('reject a1');
          throw new Error('not now');
        }
        log.push(`end ${name}`);
      },
    });
    await bus.publish([
      { topic: 't1', key: 'a', value: Buffer.from('a1') },
      { topic: 't1', key: 'a', value: Buffer.from('a2') },
      { topic: 't1', key: 'b', value: Buffer.from('b1') },
      { topic: 't1', key: 'b', value: Buffer.from('b2') },
    ]);
    await until(() => log.includes('end a2') && log.includes('end b2'));
    // b is not held up by a's hand-back, and a2 waits for a1's redelivery to finish.
    expect(log.indexOf('start a2')).to.be.greaterThan(log.indexOf('end a1'));
    expect(log.indexOf('end b2')).to.be.lessThan(log.indexOf('end a1'));
    expect(log.indexOf('start b2')).to.be.greaterThan(log.indexOf('end b1'));
    expect(log.filter((l) => l === 'start a2')).to.have.length(1);
    await bus.close();
  });

  it('delivers a backlog of many pages over two topics in publish order, past a record handed back', async () => {
    // More records than the largest page, on two topics: the scan reads pages per topic and
    // merges them, and one topic's old handed-back record does not hold the other topic back.
    const bus = createEmbeddedBus({ path: join(dir, 'b.sqlite'), redeliveryDelayMs: 1000 });
    const records = [{ topic: 'ta', key: 'stuck', value: Buffer.from('stuck') }];
    for (let i = 0; i < 700; i += 1)
      records.push({ topic: i % 3 === 0 ? 'ta' : 'tb', key: `k${i}`, value: Buffer.from(`${i}`) });
    await bus.publish(records);
    const seen: string[] = [];
    let stuckCalls = 0;
    await bus.subscribe({
      group: 'g',
      topics: ['ta', 'tb'],
      fromBeginning: true,
      concurrency: 3,
      handler: async (r) => {
        if (r.key === 'stuck' && (stuckCalls += 1) === 1) throw new Error('not now');
        seen.push(r.key);
      },
    });
    await until(() => seen.length === 701, 10_000);
    expect(stuckCalls).to.equal(2);
    expect(seen.indexOf('stuck')).to.be.greaterThan(0);
    // At most `concurrency` run at once, so the order of starts is the order of publishing.
    const others = seen.filter((k) => k !== 'stuck').map((k) => Number(k.slice(1)));
    expect(others.every((n, i) => i === 0 || Math.abs(n - (others[i - 1] ?? 0)) <= 3)).to.equal(
      true,
    );
    expect(new Set(others).size).to.equal(700);
    await bus.close();
  });

  it('delivers a scheduled record no earlier than its due time, and later records meanwhile', async () => {
    const bus = createEmbeddedBus({ path: join(dir, 'b.sqlite') });
    const seen: { name: string; at: number }[] = [];
    await bus.subscribe({
      group: 'g',
      topics: ['t1'],
      fromBeginning: true,
      handler: async (r) => void seen.push({ name: r.value.toString(), at: Date.now() }),
    });
    const due = Date.now() + 400;
    await bus.publish([{ topic: 't1', key: 'k', value: Buffer.from('later'), notBefore: due }]);
    await bus.publish([
      { topic: 't1', key: 'other', value: Buffer.from('other-key') },
      { topic: 't1', key: 'k', value: Buffer.from('same-key') },
    ]);
    await until(() => seen.length === 3);
    expect(seen.map((s) => s.name)).to.deep.equal(['other-key', 'same-key', 'later']);
    expect(seen[2]?.at).to.be.at.least(due);
    expect(seen[1]?.at).to.be.lessThan(due);
    await bus.close();
  });

  it('keeps a scheduled record across a restart and delivers it once due', async () => {
    const path = join(dir, 'b.sqlite');
    const first = createEmbeddedBus({ path });
    const due = Date.now() + 500;
    await first.publish([{ ...rec('scheduled'), notBefore: due }]);
    const early: string[] = [];
    await first.subscribe({
      group: 'g',
      topics: ['t1'],
      fromBeginning: true,
      handler: async (r) => void early.push(r.key),
    });
    await first.close();

    const second = createEmbeddedBus({ path });
    const seen: { key: string; at: number }[] = [];
    await second.subscribe({
      group: 'g',
      topics: ['t1'],
      fromBeginning: true,
      handler: async (r) => void seen.push({ key: r.key, at: Date.now() }),
    });
    await until(() => seen.length === 1);
    expect(early).to.deep.equal([]);
    expect(seen[0]?.key).to.equal('scheduled');
    expect(seen[0]?.at).to.be.at.least(due);
    await second.close();
  });

  it('opens a file written before due times existed and delivers its records', async () => {
    const path = join(dir, 'old.sqlite');
    const old = new DatabaseSync(path);
    old.exec(`CREATE TABLE records (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL,
      key TEXT NOT NULL, value BLOB NOT NULL, headers TEXT NOT NULL, at INTEGER NOT NULL);
      CREATE TABLE acks (grp TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (grp, seq));
      CREATE TABLE groups (grp TEXT PRIMARY KEY, start_seq INTEGER NOT NULL);`);
    old
      .prepare('INSERT INTO records (topic, key, value, headers, at) VALUES (?, ?, ?, ?, ?)')
      .run('t1', 'old', Buffer.from('old'), '{}', Date.now());
    old.close();
    const bus = createEmbeddedBus({ path });
    const seen: string[] = [];
    await bus.subscribe({
      group: 'g',
      topics: ['t1'],
      fromBeginning: true,
      handler: async (r) => void seen.push(r.key),
    });
    await bus.publish([rec('new')]);
    await until(() => seen.length === 2);
    expect(seen).to.deep.equal(['old', 'new']);
    await bus.close();
  });

  it('refuses to publish once closed', async () => {
    const bus = createEmbeddedBus({ path: ':memory:' });
    await bus.close();
    const error = await bus.publish([rec('x')]).catch((e: Error) => e);
    expect((error as Error).name).to.equal('BusUnavailableError');
  });
});
