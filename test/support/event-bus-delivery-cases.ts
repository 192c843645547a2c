// EventBus conformance (event-bus-conformance.ts): delivery to groups, order per key, hand-back
// and scheduled records.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { BusRecord, OutgoingRecord } from '../../services/core/bus/event-bus.ts';
import { HandBack } from '../../services/core/bus/hand-back.ts';
import {
  REDELIVERY_DELAY_MS,
  T1,
  T2,
  rec,
  sleep,
  until,
  valueOf,
  type ConformanceContext,
} from './event-bus-conformance-kit.ts';

export function deliveryCases(ctx: ConformanceContext): void {
  groupAndKeyOrderCases(ctx);
  handBackAndDueTimeCases(ctx);
}

/** Each group gets every record once; one key's records in publish order, one at a time. */
function groupAndKeyOrderCases(ctx: ConformanceContext): void {
  it('delivers every record to each group once, with its topic, key, value bytes and headers', async () => {
    const bus = ctx.open();
    const bytes = Buffer.from([0x00, 0x01, 0xfe, 0xff, 0x80]);
    // One record before the groups exist (they start from the beginning), one after.
    await bus.publish([
      { topic: T1, key: 'job-1', value: bytes, headers: { 'ce-type': 'x.y', note: 'é ✓' } },
    ]);
    const groups = [`g1-${randomUUID()}`, `g2-${randomUUID()}`];
    const got = new Map<string, BusRecord[]>(groups.map((g) => [g, []]));
    for (const [i, group] of groups.entries())
      await ctx.subscribe(bus, {
        group,
        topics: [T1, T2],
        concurrency: i === 0 ? 1 : 4,
        handler: async (r) => void got.get(group)?.push(r),
      });
    await bus.publish([rec('job-2', 'second', T2)]);
    const all = (): BusRecord[] => [...got.values()].flat();
    await until(() => all().length >= 4, ctx.under.deliveryMs, 'both records in both groups');
    await sleep(ctx.under.quietMs);
    for (const group of groups) {
      const records = [...(got.get(group) ?? [])].sort((a, b) => a.key.localeCompare(b.key));
      expect(
        records.map((r) => [r.topic, r.key]),
        group,
      ).to.deep.equal([
        [T1, 'job-1'],
        [T2, 'job-2'],
      ]);
      expect(Buffer.compare(records[0]?.value ?? Buffer.alloc(0), bytes)).to.equal(0);
      expect(records[0]?.headers).to.deep.equal({ 'ce-type': 'x.y', note: 'é ✓' });
      expect(records[1]?.headers).to.deep.equal({});
      expect(valueOf(records[1] as BusRecord)).to.equal('second');
    }
  });

  it('hands the records of one key over in publish order, one at a time, other keys alongside', async () => {
    const bus = ctx.open();
    const keys = ['k0', 'k1', 'k2', 'k3'];
    const log: string[] = [];
    let running = 0;
    let mostRunning = 0;
    await ctx.subscribe(bus, {
      group: `g-${randomUUID()}`,
      concurrency: 4,
      handler: async (r) => {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        log.push(`start ${valueOf(r)}`);
        // Long enough for the other keys' records to start meanwhile.
        await sleep(20);
        log.push(`end ${valueOf(r)}`);
        running -= 1;
      },
    });
    const records: OutgoingRecord[] = [];
    for (let n = 0; n < 6; n += 1) for (const key of keys) records.push(rec(key, `${key}.${n}`));
    await bus.publish(records);
    await until(() => log.length >= 2 * records.length, ctx.under.deliveryMs, 'every record');
    await sleep(ctx.under.quietMs);
    expect(log).to.have.length(2 * records.length);
    for (const key of keys) {
      const own = log.filter((line) => line.split(' ')[1]?.startsWith(`${key}.`));
      const expected = [0, 1, 2, 3, 4, 5].flatMap((n) => [`start ${key}.${n}`, `end ${key}.${n}`]);
      expect(own, `the records of ${key}`).to.deep.equal(expected);
    }
    expect(mostRunning, 'records running at once').to.be.greaterThan(1);
  });
}

/** A handed-back record comes again after its pause; a scheduled one once due. */
function handBackAndDueTimeCases(ctx: ConformanceContext): void {
  it('delivers a handed-back record again after the pause, later records of its key behind it, other keys not held up', async () => {
    const bus = ctx.open();
    const group = `g-${randomUUID()}`;
    const log: Array<{ line: string; at: number }> = [];
    let a1Calls = 0;
    const sub = await ctx.subscribe(bus, {
      group,
      concurrency: 2,
      handler: async (r) => {
        const value = valueOf(r);
        log.push({ line: `start ${value}`, at: Date.now() });
        await sleep(30);
        if (value === 'a1' && ++a1Calls === 1) {
          log.push({ line: 'hand back a1', at: Date.now() });
          throw new HandBack('not now');
        }
        log.push({ line: `end ${value}`, at: Date.now() });
      },
    });
    await bus.publish([rec('a', 'a1'), rec('a', 'a2'), rec('b', 'b1'), rec('b', 'b2')]);
    const lines = (): string[] => log.map((l) => l.line);
    await until(() => lines().includes('end a2'), ctx.under.deliveryMs, 'a2 to end');
    await sleep(ctx.under.quietMs);
    const at = (line: string): number => lines().indexOf(line);
    const starts = lines().filter((l) => l.startsWith('start'));
    expect(starts.filter((l) => l.startsWith('start a'))).to.deep.equal([
      'start a1',
      'start a1',
      'start a2',
    ]);
    expect(starts.filter((l) => l.startsWith('start b'))).to.deep.equal(['start b1', 'start b2']);
    expect(at('start a2'), 'a2 after the redelivered a1').to.be.greaterThan(at('end a1'));
    expect(at('start b2'), 'b2 after b1').to.be.greaterThan(at('end b1'));
    expect(at('end b2'), 'b done before a1 came again').to.be.lessThan(at('end a1'));
    const handedBackAt = log.find((l) => l.line === 'hand back a1')?.at ?? 0;
    const againAt = log.filter((l) => l.line === 'start a1')[1]?.at ?? 0;
    expect(againAt - handedBackAt, 'pause before the redelivery (ms)').to.be.at.least(
      REDELIVERY_DELAY_MS - 50,
    );

    // Finished once redelivered: the group gets only what it has not finished.
    await sub.close(5000);
    const later = await ctx.collect(bus, group);
    await bus.publish([rec('c')]);
    await ctx.deliveredOnce(later, ['c']);
  });

  it('delivers a record published with a due time no earlier than that, and later records meanwhile', async () => {
    const bus = ctx.open();
    const seen: Array<{ value: string; at: number }> = [];
    await ctx.subscribe(bus, {
      group: `g-${randomUUID()}`,
      handler: async (r) => void seen.push({ value: valueOf(r), at: Date.now() }),
    });
    // Delivering already (Kafka: the group has formed), so that the wait below is the due time's.
    await bus.publish([rec('first')]);
    await until(() => seen.length === 1, ctx.under.deliveryMs, 'the first record');
    const due = Date.now() + 1500;
    await bus.publish([{ ...rec('k', 'scheduled'), notBefore: due }]);
    await bus.publish([rec('other', 'other-key'), rec('k', 'same-key')]);
    await until(() => seen.length >= 4, ctx.under.deliveryMs + 1500, 'the three records');
    await sleep(ctx.under.quietMs);
    // Two keys: their order is not promised (on Kafka they may be on two partitions).
    expect(seen.map((s) => s.value).slice(1, 3)).to.have.members(['other-key', 'same-key']);
    expect(seen.map((s) => s.value).slice(3)).to.deep.equal(['scheduled']);
    const sameKeyAt = seen.find((s) => s.value === 'same-key')?.at;
    expect(sameKeyAt, 'the record of its key due at once').to.be.lessThan(due);
    expect(seen[3]?.at, 'the scheduled record').to.be.at.least(due);
  });
}
