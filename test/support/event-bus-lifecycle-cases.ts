// EventBus conformance (event-bus-conformance.ts): restarts (at-least-once), waitOnly/begin,
// and the drain of a closing subscription.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { BusUnavailableError, type RecordHandler } from '../../services/core/bus/event-bus.ts';
import { HandBack } from '../../services/core/bus/hand-back.ts';
import {
  gate,
  rec,
  sleep,
  until,
  valueOf,
  whenAborted,
  type BusCapabilities,
  type ConformanceContext,
} from './event-bus-conformance-kit.ts';

export function lifecycleCases(ctx: ConformanceContext, capabilities: BusCapabilities): void {
  restartCases(ctx);
  waitOnlyCases(ctx, capabilities);
  closeCases(ctx);
}

/** What a restart keeps: scheduled records, and the records a group had not finished. */
function restartCases(ctx: ConformanceContext): void {
  it('keeps a record scheduled before a restart and delivers it once due', async () => {
    const group = `g-${randomUUID()}`;
    const first = ctx.open();
    const early = await ctx.collect(first, group);
    const due = Date.now() + 1500;
    await first.publish([{ ...rec('k', 'scheduled'), notBefore: due }]);
    await first.close();
    expect(early).to.deep.equal([]);

    const second = ctx.open();
    const seen: Array<{ value: string; at: number }> = [];
    await ctx.subscribe(second, {
      group,
      handler: async (r) => void seen.push({ value: valueOf(r), at: Date.now() }),
    });
    await until(() => seen.length >= 1, ctx.under.deliveryMs + 1500, 'the scheduled record');
    await sleep(ctx.under.quietMs);
    expect(seen.map((s) => s.value)).to.deep.equal(['scheduled']);
    expect(seen[0]?.at).to.be.at.least(due);
  });

  it('after a restart gives a group again the records it had not finished, and not the finished ones', async () => {
    const group = `g-${randomUUID()}`;
    const first = ctx.open();
    const started: string[] = [];
    const finished: string[] = [];
    await ctx.subscribe(first, {
      group,
      concurrency: 2,
      handler: async (r, { signal }) => {
        started.push(valueOf(r));
        if (valueOf(r) === 'unfinished') await whenAborted(signal);
        if (signal.aborted) throw new HandBack('stopping');
        finished.push(valueOf(r));
      },
    });
    await first.publish([rec('k1', 'done'), rec('k2', 'unfinished')]);
    await until(
      () => started.length === 2 && finished.length === 1,
      ctx.under.deliveryMs,
      'both to start and one to finish',
    );
    // Stops with the second record's handler still running: it was never acknowledged.
    await first.close();
    expect(finished).to.deep.equal(['done']);

    const again = await ctx.collect(ctx.open(), group);
    await ctx.deliveredOnce(again, ['unfinished']);
  });
}

/** A handler that only waits (waitOnly): it keeps its record once begun, else it may move. */
function waitOnlyCases(ctx: ConformanceContext, capabilities: BusCapabilities): void {
  it('a handler that only waits (waitOnly), then begins, keeps its record, is not aborted and finishes it once', async () => {
    const bus = ctx.open();
    const group = `g-${randomUUID()}`;
    const resume = gate();
    const calls: string[] = [];
    let beganInMs: number | undefined;
    let abortedAtEnd: boolean | undefined;
    const sub = await ctx.subscribe(bus, {
      group,
      handler: async (r, delivery) => {
        calls.push(valueOf(r));
        delivery.waitOnly();
        await resume.opened;
        const beginning = Date.now();
        await delivery.begin();
        beganInMs = Date.now() - beginning;
        abortedAtEnd = delivery.signal.aborted;
      },
    });
    await bus.publish([rec('job', 'waits')]);
    await until(() => calls.length === 1, ctx.under.deliveryMs, 'the record to start');
    await sleep(ctx.under.quietMs);
    resume.open();
    await until(() => abortedAtEnd !== undefined, ctx.under.deliveryMs, 'the handler to end');
    expect(calls).to.deep.equal(['waits']);
    expect(abortedAtEnd, 'aborted').to.equal(false);
    // No rebalance is under way, so begin has nothing to wait for.
    expect(beganInMs, 'begin() took (ms)').to.be.below(500);

    await sub.close(5000);
    const later = await ctx.collect(bus, group);
    await bus.publish([rec('c')]);
    await ctx.deliveredOnce(later, ['c']);
  });

  // The buses differ here (BusCapabilities.movesWaitingRecords): on Kafka a second member with
  // a free slot takes the waiting record; the embedded bus has one member per group, nothing
  // to move the record to, and its waitOnly does nothing: the case checks that instead.
  const moves = capabilities.movesWaitingRecords;
  it(`a record whose handler only waits (waitOnly) ${moves ? 'moves to a member with a free slot that joins the group: aborted here, run there' : 'stays with its handler: the embedded bus has no other member to move it to'}`, async () => {
    const group = `g-${randomUUID()}`;
    const first = ctx.open();
    const resume = gate();
    const events: string[] = [];
    const handler =
      (member: string): RecordHandler =>
      async (_r, delivery) => {
        events.push(`start@${member}`);
        delivery.waitOnly();
        if (member === 'first') await Promise.race([resume.opened, whenAborted(delivery.signal)]);
        await delivery.begin();
        if (delivery.signal.aborted) {
          events.push(`moved@${member}`);
          throw new HandBack('moved');
        }
        events.push(`end@${member}`);
      };
    await ctx.subscribe(first, { group, concurrency: 1, handler: handler('first') });
    await first.publish([rec('job', 'waits')]);
    await until(() => events.length === 1, ctx.under.deliveryMs, 'the record to start');
    if (moves) {
      await ctx.subscribe(ctx.open(), { group, concurrency: 1, handler: handler('second') });
      await until(() => events.includes('end@second'), ctx.under.deliveryMs, 'the move');
      await sleep(ctx.under.quietMs);
      expect(events).to.deep.equal(['start@first', 'moved@first', 'start@second', 'end@second']);
    } else {
      // As long as a move on Kafka takes: nothing happens to the waiting handler.
      await sleep(Math.max(ctx.under.quietMs, 1000));
      expect(events).to.deep.equal(['start@first']);
      resume.open();
      await until(() => events.length === 2, ctx.under.deliveryMs, 'the handler to end');
      expect(events).to.deep.equal(['start@first', 'end@first']);
    }
  });
}

/** Closing: running handlers finish or are aborted after graceMs, then nothing is published. */
function closeCases(ctx: ConformanceContext): void {
  it('close waits for running handlers, commits what they finish and then starts nothing more', async () => {
    const bus = ctx.open();
    const group = `g-${randomUUID()}`;
    const release = gate();
    const log: string[] = [];
    const sub = await ctx.subscribe(bus, {
      group,
      concurrency: 1,
      handler: async (r) => {
        log.push(`start ${valueOf(r)}`);
        if (valueOf(r) === 'slow') await release.opened;
        log.push(`end ${valueOf(r)}`);
      },
    });
    await bus.publish([rec('k1', 'slow')]);
    await until(() => log.includes('start slow'), ctx.under.deliveryMs, 'the slow record to start');
    // Its one slot taken, the subscription holds this one back until close.
    await bus.publish([rec('k2', 'queued')]);
    let closed = false;
    const closing = sub.close(20_000).then(() => (closed = true));
    await sleep(300);
    expect(closed, 'closed while a handler runs').to.equal(false);
    release.open();
    await closing;
    expect(log, 'the queued record did not start').to.deep.equal(['start slow', 'end slow']);
    await bus.publish([rec('k3', 'after')]);
    await sleep(ctx.under.quietMs);
    expect(log, 'nothing after close').to.deep.equal(['start slow', 'end slow']);

    const later = await ctx.collect(bus, group);
    await until(() => later.length >= 2, ctx.under.deliveryMs, 'the unfinished records');
    await sleep(ctx.under.quietMs);
    expect([...later].sort()).to.deep.equal(['after', 'queued']);
  });

  it('close aborts a handler still running after graceMs, and its record comes again', async () => {
    const bus = ctx.open();
    const group = `g-${randomUUID()}`;
    let started = false;
    let aborted = false;
    const sub = await ctx.subscribe(bus, {
      group,
      handler: async (_r, { signal }) => {
        started = true;
        await whenAborted(signal);
        aborted = true;
        throw new HandBack('stopping');
      },
    });
    await bus.publish([rec('k', 'stuck')]);
    await until(() => started, ctx.under.deliveryMs, 'the handler to start');
    const closing = Date.now();
    await sub.close(300);
    expect(aborted, 'the handler was aborted').to.equal(true);
    expect(Date.now() - closing, 'close time (ms)')
      .to.be.at.least(250)
      .and.below(10_000);

    const later = await ctx.collect(bus, group);
    await bus.publish([rec('k', 'marker')]);
    await ctx.deliveredOnce(later, ['stuck', 'marker']);
  });

  it('refuses to publish once closed, with BusUnavailableError', async () => {
    const bus = ctx.open();
    await bus.publish([rec('before')]);
    await bus.close();
    const error = await bus.publish([rec('after')]).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(BusUnavailableError);
  });
}
