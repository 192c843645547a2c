// What the EventBus conformance cases share (event-bus-conformance.ts): how a bus under test is
// described, the context each case runs in, and small helpers.
import type {
  BusRecord,
  EventBus,
  OutgoingRecord,
  SubscribeOptions,
  Subscription,
} from '../../services/core/bus/event-bus.ts';
import { topics } from '../../services/core/bus/event-bus.ts';

/** Where one case's records live. */
export interface BusPlace {
  /**
   * Opens a bus on this place. Opened again once the previous bus closed, it holds the same
   * records and the same position of each group (a restart). Opened while another bus of the
   * place is open, it is a second member of the groups both subscribe to: only the cases for
   * `movesWaitingRecords` do that (the embedded bus has one member per group, one process).
   */
  open(): EventBus;
  /** Removes what the place holds, once every bus of it is closed. */
  remove?(): Promise<void>;
}

/** Settings every bus of the suite is opened with, so the cases can time what depends on them. */
export interface ConformanceSettings {
  /** The bus's pause before a handed-back record comes again, ms. */
  redeliveryDelayMs: number;
}

/** What a bus does where the two implementations legitimately differ. */
export interface BusCapabilities {
  /**
   * A record whose handler only waits (DeliveryContext.waitOnly) moves to a member of its group
   * with free slots when the group rebalances, its handler here aborted. Kafka: yes. The
   * embedded bus runs one member per group (one process): there is nothing to move the record
   * to, so it ignores waitOnly and the record stays with its handler.
   */
  movesWaitingRecords: boolean;
}

export interface BusUnderTest {
  /** A fresh place for one case. */
  newPlace(settings: ConformanceSettings): Promise<BusPlace>;
  /** Longest wait for a delivery, ms (Kafka's first one waits for the group to form). */
  deliveryMs: number;
  /** How long to watch for records that must not come, ms. */
  quietMs: number;
  /** The bus's log lines, printed when a case fails. */
  logs?(): string[];
}

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

export async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** A promise and the function that resolves it. */
export function gate(): { open: () => void; opened: Promise<void> } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

export const whenAborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });

export const REDELIVERY_DELAY_MS = 500;
// Both buses create or accept these topics (Kafka creates only the topics of event-bus.ts).
export const T1 = topics.transcodeRequests;
export const T2 = topics.jobEvents;
export const rec = (key: string, value = key, topic: string = T1): OutgoingRecord => ({
  topic,
  key,
  value: Buffer.from(value),
});
export const valueOf = (r: BusRecord): string => r.value.toString();

/** What a case gets from the suite: buses on its place, closed after it, and waits timed for the bus. */
export interface ConformanceContext {
  /** The bus under test (set before the first case runs). */
  readonly under: BusUnderTest;
  /** A bus on the case's place, closed after the case. */
  open(): EventBus;
  /** Subscribes to T1 from the beginning unless told otherwise; closed (grace 0) after the case. */
  subscribe(
    bus: EventBus,
    options: Omit<SubscribeOptions, 'topics'> & { topics?: readonly string[] },
  ): Promise<Subscription>;
  /** Values handed to a new member of `group`: only what the group has not finished comes. */
  collect(bus: EventBus, group: string): Promise<string[]>;
  /** Waits for `expected` in `seen`, then for quietMs, and checks nothing else came. */
  deliveredOnce(seen: readonly string[], expected: string[]): Promise<void>;
}
