import type { EventEmitter } from 'node:events';
import type { BusRecord, SubscribeOptions, Subscription } from './event-bus.ts';
import { createFairShare, NO_TENANT, type FairShare } from '../scheduling/fair-share.ts';

/** A pending record as the scan sees it: its value and headers are read only when needed. */
export interface PendingRow {
  seq: number;
  topic: string;
  key: string;
}

/** One group's view of the records it has not acknowledged yet. */
export interface PendingRecords {
  /** Unacknowledged records whose due time is `now` (epoch ms) or earlier, in publish order. */
  due(now: number): Iterable<PendingRow>;
  /** Records of `topic` the group has not acknowledged yet, due or scheduled. */
  backlog(topic: string): number;
  /** The earliest due time after `now` (epoch ms) of an unacknowledged record, if any. */
  nextDueAfter(now: number): number | undefined;
  /** The whole record, or undefined if it is gone (replaced in a compacted topic). */
  read(row: PendingRow): BusRecord | undefined;
  ack(seq: number): void;
}

// setTimeout fires at once for longer delays; a wake-up before the due time just re-arms.
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How often the backlog is told to `onLag` (a count query per topic; scrapes are 15 s apart). */
const LAG_REPORT_MS = 2000;

/**
 * Delivers one group's records to its handler, at most `concurrency` at once.
 *
 * Per-key order: a record is not started while an earlier due and unacknowledged record of
 * its key exists, whether that one is running or handed back and waiting to be redelivered.
 * Each pass with a free slot therefore scans the due records in publish order and keeps only
 * the first one of each key it meets; a record that is not due yet is not in the scan and
 * blocks nothing. Among those ready records, fair-share.ts picks which tenant's record takes
 * the slot (the same choice as on Kafka), not simply the oldest.
 *
 * Hand-back waits are kept in memory: after a restart every unacknowledged record is
 * delivered again at once, which is what a restart should do anyway.
 */
export function runEmbeddedSubscription(
  opts: SubscribeOptions,
  pending: PendingRecords,
  wake: EventEmitter,
  redeliveryDelayMs: number,
): Subscription {
  const s: Delivery = {
    opts,
    pending,
    redeliveryDelayMs,
    concurrency: opts.concurrency ?? 1,
    abort: new AbortController(),
    running: new Map(),
    handedBack: new Map(),
    fair: createFairShare(opts.fairness),
    tenants: tenantsOf(opts, pending),
    stopping: false,
  };
  const timer = dueTimer(s, () => pump());
  const { pump, pumpSoon } = serialPump(() => {
    if (s.stopping) return;
    const now = Date.now();
    for (const row of pickDue(s, now)) deliver(s, row, pumpSoon);
    timer.arm(now);
  });
  // Woken by every commit that published to one of this group's topics (all of them if unsaid).
  const onRecord = (published?: ReadonlySet<string>): void => {
    if (!published || opts.topics.some((t) => published.has(t))) pumpSoon();
  };
  wake.on('record', onRecord);
  queueMicrotask(pump);
  const stopLag = reportLag(opts, pending);

  return {
    async close(graceMs = 0): Promise<void> {
      s.stopping = true;
      timer.clear();
      stopLag();
      wake.off('record', onRecord);
      const all = Promise.all(s.running.values());
      let graceTimer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((r) => (graceTimer = setTimeout(r, graceMs)))]);
      clearTimeout(graceTimer);
      s.abort.abort();
      await all;
    },
  };
}

/** What the steps of one subscription share. */
interface Delivery {
  opts: SubscribeOptions;
  pending: PendingRecords;
  redeliveryDelayMs: number;
  concurrency: number;
  abort: AbortController;
  running: Map<number, Promise<void>>;
  /** Handed-back records → when they may be delivered again (epoch ms). */
  handedBack: Map<number, number>;
  fair: FairShare;
  tenants: Tenants;
  stopping: boolean;
}

interface Tenants {
  of: (row: PendingRow) => string;
  forget(seq: number): void;
}

/** Tenant of each record read so far (forgotten once acknowledged), so each is read once. */
function tenantsOf(opts: SubscribeOptions, pending: PendingRecords): Tenants {
  const tenants = new Map<number, string>();
  return {
    of(row) {
      let tenant = tenants.get(row.seq);
      if (tenant === undefined) {
        const record = opts.fairness ? pending.read(row) : undefined;
        tenant = record && opts.fairness ? opts.fairness.tenantOf(record) : NO_TENANT;
        tenants.set(row.seq, tenant);
      }
      return tenant;
    },
    forget: (seq) => void tenants.delete(seq),
  };
}

/** The due records that take the free slots: the first of each key, picked fairly by tenant. */
function pickDue(s: Delivery, now: number): PendingRow[] {
  const { running, concurrency, handedBack, opts } = s;
  if (running.size >= concurrency) return [];
  const ready: PendingRow[] = [];
  const seenKeys = new Set<string>();
  for (const row of s.pending.due(now)) {
    const firstOfKey = !seenKeys.has(row.key);
    seenKeys.add(row.key);
    if (!firstOfKey || running.has(row.seq) || (handedBack.get(row.seq) ?? 0) > now) continue;
    ready.push(row);
    // Without tenants the oldest ready records win: no need to read the whole backlog.
    if (!opts.fairness && ready.length >= concurrency - running.size) break;
  }
  const picked = s.fair.pick(ready, concurrency - running.size, s.tenants.of);
  for (const row of picked) handedBack.delete(row.seq);
  return picked;
}

/** One timer for the whole subscription, at the earliest moment something becomes due. */
function dueTimer(s: Delivery, onDue: () => void): { arm(now: number): void; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Infinity;
  return {
    arm(now) {
      let at = s.pending.nextDueAfter(now) ?? Infinity;
      for (const retryAt of s.handedBack.values()) if (retryAt > now && retryAt < at) at = retryAt;
      if (at === timerAt) return;
      clearTimeout(timer);
      timer = undefined;
      timerAt = at;
      if (at === Infinity) return;
      timer = setTimeout(
        () => {
          timer = undefined;
          timerAt = Infinity;
          onDue();
        },
        Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())),
      ).unref();
    },
    clear: () => clearTimeout(timer),
  };
}

/** Runs the record's handler: acknowledged when it resolves, handed back when it rejects. */
function deliver(s: Delivery, row: PendingRow, pumpSoon: () => void): void {
  const { seq } = row;
  const record = s.pending.read(row);
  if (!record) {
    // Replaced by a newer record of its key since the scan: nothing left to deliver.
    s.fair.finished(s.tenants.of(row));
    s.tenants.forget(seq);
    return;
  }
  const tenant = s.tenants.of(row);
  const handled = new Promise<void>((resolve) =>
    resolve(
      s.opts.handler(record, {
        signal: s.abort.signal,
        heartbeat: async () => {},
        waitOnly: () => {},
        begin: () => Promise.resolve(),
      }),
    ),
  );
  const done = handled
    .then(
      () => {
        s.pending.ack(seq);
        s.tenants.forget(seq);
      },
      () => void s.handedBack.set(seq, Date.now() + s.redeliveryDelayMs),
    )
    .finally(() => {
      s.fair.finished(tenant);
      s.running.delete(seq);
      pumpSoon();
    });
  s.running.set(seq, done);
}

/**
 * `pump` runs a pass now; `pumpSoon` once at the end of this event-loop turn. A handler may
 * publish synchronously, which wakes the pump again: that pass is run after the current one
 * instead of inside it, so no record is started twice. Wake-ups and finished records of one
 * event-loop turn share one pass: under a burst a group commit resolves many handlers and
 * publishes many records at once, and each pass queries the file.
 */
function serialPump(pass: () => void): { pump: () => void; pumpSoon: () => void } {
  let pumping = false;
  let pumpAgain = false;
  let pumpQueued = false;
  const pump = (): void => {
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        pass();
      } while (pumpAgain);
    } finally {
      pumping = false;
    }
  };
  const pumpSoon = (): void => {
    if (pumpQueued) return;
    pumpQueued = true;
    setImmediate(() => {
      pumpQueued = false;
      pump();
    });
  };
  return { pump, pumpSoon };
}

/** The one partition's lag, as Kafka's is reported: the records the group has not finished. */
function reportLag(opts: SubscribeOptions, pending: PendingRecords): () => void {
  if (!opts.onLag) return () => {};
  const report = (): void => {
    for (const topic of opts.topics) opts.onLag?.(topic, 0, pending.backlog(topic));
  };
  const lagTimer = setInterval(report, LAG_REPORT_MS).unref();
  queueMicrotask(report);
  return () => clearInterval(lagTimer);
}
