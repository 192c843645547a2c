// The one test suite both EventBus implementations pass (event-bus.ts), as the media stores share
// media-store-suite.ts. Each bus's test file says how to open that bus on a place of its own
// and calls eventBusConformance; every case gets a fresh place (Kafka: a topic prefix;
// embedded: a directory) and fresh group names. The cases are in event-bus-delivery-cases.ts and
// event-bus-lifecycle-cases.ts.
import type { EventBus } from '../../services/core/bus/event-bus.ts';
import {
  REDELIVERY_DELAY_MS,
  T1,
  sleep,
  until,
  valueOf,
  type BusCapabilities,
  type BusPlace,
  type BusUnderTest,
  type ConformanceContext,
} from './event-bus-conformance-kit.ts';
import { deliveryCases } from './event-bus-delivery-cases.ts';
import { lifecycleCases } from './event-bus-lifecycle-cases.ts';
import { expect } from 'chai';

export type {
  BusCapabilities,
  BusPlace,
  BusUnderTest,
  ConformanceSettings,
} from './event-bus-conformance-kit.ts';

/**
 * Registers the conformance cases of `name`, the bus that `makeBus` describes (called in the
 * suite's `before`, so that a missing test service fails the run there). Where the buses
 * differ, `capabilities` says which claim the case checks; no case is skipped.
 */
export function eventBusConformance(
  name: string,
  capabilities: BusCapabilities,
  makeBus: () => BusUnderTest,
): void {
  describe(`EventBus conformance: ${name}`, function () {
    this.timeout(90_000);
    let place: BusPlace;
    let closers: Array<() => Promise<void>> = [];
    const ctx = caseContext(
      () => place,
      (close) => closers.push(close),
    );

    before(() => {
      ctx.setUnder(makeBus());
    });
    beforeEach(async () => {
      place = await ctx.under.newPlace({ redeliveryDelayMs: REDELIVERY_DELAY_MS });
    });
    afterEach(async function () {
      await Promise.allSettled(closers.reverse().map((close) => close()));
      closers = [];
      await place.remove?.();
      if (this.currentTest?.state === 'failed' && ctx.under.logs)
        console.error(ctx.under.logs().slice(-60).join('\n'));
    });

    deliveryCases(ctx);
    lifecycleCases(ctx, capabilities);
  });
}

/**
 * The context of the cases: buses and subscriptions are handed to `track`, to be closed after the
 * case newest first (a subscription before its bus).
 */
function caseContext(
  place: () => BusPlace,
  track: (close: () => Promise<void>) => void,
): ConformanceContext & { setUnder(bus: BusUnderTest): void } {
  let under: BusUnderTest | undefined;
  const ctx: ConformanceContext & { setUnder(bus: BusUnderTest): void } = {
    get under(): BusUnderTest {
      if (!under) throw new Error("the bus under test is set in the suite's before hook");
      return under;
    },
    setUnder: (bus) => (under = bus),
    open: (): EventBus => {
      const bus = place().open();
      track(() => bus.close());
      return bus;
    },
    subscribe: async (bus, options) => {
      const sub = await bus.subscribe({ topics: [T1], fromBeginning: true, ...options });
      track(() => sub.close(0));
      return sub;
    },
    collect: async (bus, group) => {
      const seen: string[] = [];
      await ctx.subscribe(bus, { group, handler: async (r) => void seen.push(valueOf(r)) });
      return seen;
    },
    deliveredOnce: async (seen, expected) => {
      await until(() => seen.length >= expected.length, ctx.under.deliveryMs, expected.join(', '));
      await sleep(ctx.under.quietMs);
      expect(seen).to.deep.equal(expected);
    },
  };
  return ctx;
}
