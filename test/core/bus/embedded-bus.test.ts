import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';
import type { BusRecord } from '../../../services/core/bus/event-bus.ts';

const rec = (key: string): { topic: string; key: string; value: Buffer } => ({ topic: 't1', key, value: Buffer.from(key) });
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
    await bus.subscribe({ group: 'g1', topics: ['t1'], fromBeginning: true, handler: async (r) => void g1.push(r) });
    await bus.subscribe({ group: 'g2', topics: ['t1'], fromBeginning: true, concurrency: 4, handler: async (r) => void g2.push(r) });
    await bus.publish([rec('c')]);
    await until(() => g1.length === 3 && g2.length === 3);
    expect(g1.map((r) => r.key)).to.deep.equal(['a', 'b', 'c']);
    expect(g1[0]?.headers).to.deep.equal({ h: '1' });
    expect(g1[0]?.value.toString()).to.equal('a');
    await bus.close();
  });

  it('a group that starts late without fromBeginning sees only new records', async () => {
    const bus = createEmbeddedBus({ path: join(dir, 'b.sqlite') });
    await bus.publish([rec('old')]);
    const seen: string[] = [];
    await bus.subscribe({ group: 'late', topics: ['t1'], handler: async (r) => void seen.push(r.key) });
    await bus.publish([rec('new')]);
    await until(() => seen.length === 1);
    expect(seen).to.deep.equal(['new']);
    await bus.close();
  });

  it('redelivers a record whose handler rejected', async () => {
    const bus = createEmbeddedBus({ path: join(dir, 'b.sqlite'), redeliveryDelayMs: 20 });
    let calls = 0;
    await bus.subscribe({ group: 'g', topics: ['t1'], fromBeginning: true, handler: async () => {
      calls += 1;
      if (calls === 1) throw new Error('not now');
    } });
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
    await first.subscribe({ group: 'g', topics: ['t1'], fromBeginning: true, handler: async (r, ctx) => {
      handled.push(r.key);
      if (r.key === 'unfinished') await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      if (ctx.signal.aborted) throw new Error('handed back');
    } });
    await until(() => handled.length === 2);
    await first.close();

    const second = createEmbeddedBus({ path });
    const again: string[] = [];
    await second.subscribe({ group: 'g', topics: ['t1'], fromBeginning: true, handler: async (r) => void again.push(r.key) });
    await until(() => again.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(again).to.deep.equal(['unfinished']);
    await second.close();
  });

  it('refuses to publish once closed', async () => {
    const bus = createEmbeddedBus({ path: ':memory:' });
    await bus.close();
    const error = await bus.publish([rec('x')]).catch((e: Error) => e);
    expect((error as Error).name).to.equal('BusUnavailableError');
  });
});
