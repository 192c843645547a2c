import { expect } from 'chai';
import type {
  BusRecord,
  EventBus,
  RecordHandler,
  SubscribeOptions,
} from '../../services/core/bus/event-bus.ts';

// Scheduling scenarios every bus must pass (embedded-fair-scheduling and kafka-fair-scheduling
// tests). Records carry `org/name` as their value; the tenant is the part before the slash.

export const TOPIC = 'media.jobs.transcode.v1';

export const tenantOf = (r: BusRecord): string => r.value.toString().split('/')[0] ?? '';

const rec = (value: string, key = value): { topic: string; key: string; value: Buffer } => ({
  topic: TOPIC,
  key,
  value: Buffer.from(value),
});

/** Handlers that run until the test releases them, recording starts and ends in order. */
export function heldHandlers(): {
  handler: RecordHandler;
  log: string[];
  started: string[];
  release(name: string): void;
  /** Releases every running handler until `total` have started and ended. */
  drain(total: number, until: ScenarioBus['until']): Promise<void>;
} {
  const log: string[] = [];
  const started: string[] = [];
  const gates = new Map<string, () => void>();
  const handler: RecordHandler = async (record, { signal }) => {
    const name = record.value.toString();
    started.push(name);
    log.push(`start ${name}`);
    await new Promise<void>((resolve, reject) => {
      gates.set(name, resolve);
      signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    });
    log.push(`end ${name}`);
  };
  return {
    handler,
    log,
    started,
    release(name) {
      const open = gates.get(name);
      if (!open) throw new Error(`${name} is not running`);
      gates.delete(name);
      open();
    },
    async drain(total, until) {
      const ended = (): number => log.filter((l) => l.startsWith('end ')).length;
      while (ended() < total) {
        for (const open of gates.values()) open();
        gates.clear();
        await until(() => gates.size > 0 || ended() >= total, 20_000, 'the next starts');
      }
    },
  };
}

export interface ScenarioBus {
  bus: EventBus;
  subscribe(options: Omit<SubscribeOptions, 'topics' | 'group'>): Promise<unknown>;
  until(check: () => boolean, ms: number, what: string): Promise<void>;
}

/**
 * Two slots; organisation A submits six jobs, then B one. When the first slot frees, B's job
 * takes it, although five of A's are older.
 */
export async function otherOrgTakesFirstFreeSlot(t: ScenarioBus): Promise<void> {
  const h = heldHandlers();
  await t.subscribe({
    concurrency: 2,
    fromBeginning: true,
    handler: h.handler,
    fairness: { tenantOf },
  });
  await t.bus.publish(Array.from({ length: 6 }, (_, i) => rec(`a/${i}`)));
  await t.until(() => h.started.length === 2, 20_000, 'two of A to start');
  await t.bus.publish([rec('b/0')]);
  // Let B's record reach the worker before a slot frees.
  await new Promise((r) => setTimeout(r, 1500));
  expect(h.started).to.have.length(2);
  h.release(h.started[0] ?? '');
  await t.until(() => h.started.length === 3, 20_000, 'the third start');
  expect(h.started[2], 'the job that took the first free slot').to.equal('b/0');
  await h.drain(7, (check, ms, what) => t.until(check, ms, what));
}

/**
 * Two slots, one long and one short job read together, then more: when the short one ends, its
 * slot takes the next record at once while the long one still runs.
 */
export async function shortJobSlotTakesNextAtOnce(t: ScenarioBus): Promise<void> {
  const h = heldHandlers();
  await t.bus.publish([rec('a/long'), rec('a/short'), rec('a/next-1'), rec('a/next-2')]);
  await t.subscribe({
    concurrency: 2,
    fromBeginning: true,
    handler: h.handler,
    fairness: { tenantOf },
  });
  await t.until(() => h.started.length === 2, 20_000, 'long and short to start');
  expect([...h.started].sort()).to.deep.equal(['a/long', 'a/short']);
  const freed = Date.now();
  h.release('a/short');
  await t.until(() => h.started.length === 3, 5000, 'the next record in the freed slot');
  expect(Date.now() - freed, 'time from the free slot to the next start (ms)').to.be.below(1000);
  expect(h.started[2]).to.equal('a/next-1');
  expect(h.log).to.not.include('end a/long');
  h.release('a/long');
  h.release('a/next-1');
  await t.until(() => h.started.length === 4, 5000, 'the last record');
  h.release('a/next-2');
}

/** Records of one key (one job id) run one after another, in order, whatever the slots. */
export async function oneKeyStaysInOrder(t: ScenarioBus): Promise<void> {
  const h = heldHandlers();
  await t.subscribe({
    concurrency: 3,
    fromBeginning: true,
    handler: h.handler,
    fairness: { tenantOf },
  });
  await t.bus.publish([
    rec('a/job-1', 'job-1'),
    rec('b/other', 'other'),
    rec('a/job-1-retry', 'job-1'),
    rec('a/job-1-cancel', 'job-1'),
  ]);
  await t.until(() => h.started.length === 2, 20_000, 'job-1 and other to start');
  await new Promise((r) => setTimeout(r, 800));
  expect([...h.started].sort(), 'free slots do not take job-1 records out of order').to.deep.equal([
    'a/job-1',
    'b/other',
  ]);
  h.release('a/job-1');
  await t.until(() => h.started.length === 3, 5000, 'the retry');
  expect(h.started[2]).to.equal('a/job-1-retry');
  await new Promise((r) => setTimeout(r, 500));
  expect(h.started).to.have.length(3);
  h.release('a/job-1-retry');
  await t.until(() => h.started.length === 4, 5000, 'the cancel');
  expect(h.started[3]).to.equal('a/job-1-cancel');
  h.release('a/job-1-cancel');
  h.release('b/other');
}
