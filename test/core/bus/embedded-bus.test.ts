import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';

// What only the embedded bus does. What both buses promise (delivery per group, order per key,
// hand-back, scheduled records, restarts, waitOnly/begin, drain) is checked by the EventBus
// conformance suite: embedded-bus-conformance.test.ts.

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

let dir: string;

describe('embedded bus (SQLite)', () => {
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-bus-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  describesReportsGroupBacklog();

  describesDeliversBacklogManyPages();
});

function describesReportsGroupBacklog(): void {
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
}

function describesDeliversBacklogManyPages(): void {
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
}
