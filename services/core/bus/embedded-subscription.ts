import type { EventEmitter } from 'node:events';
import type { BusRecord, SubscribeOptions, Subscription } from './event-bus.ts';
import { createFairShare, NO_TENANT } from '../scheduling/fair-share.ts';

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
  const concurrency = opts.concurrency ?? 1;
  const abort = new AbortController();
  const running = new Map<number, Promise<void>>();
  /** Handed-back records → when they may be delivered again (epoch ms). */
  const handedBack = new Map<number, number>();
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Infinity;
  let stopping = false;
  let pumping = false;
  let pumpAgain = false;

  const fair = createFairShare(opts.fairness);
  /** Tenant of each record read so far (forgotten once acknowledged), so each is read once. */
  const tenants = new Map<number, string>();
  const tenantOfRow = (row: PendingRow): string => {
    let tenant = tenants.get(row.seq);
    if (tenant === undefined) {
      const record = opts.fairness ? pending.read(row) : undefined;
      tenant = record && opts.fairness ? opts.fairness.tenantOf(record) : NO_TENANT;
      tenants.set(row.seq, tenant);
    }
    return tenant;
  };

  const pickDue = (now: number): PendingRow[] => {
    if (running.size >= concurrency) return [];
    const ready: PendingRow[] = [];
    const seenKeys = new Set<string>();
    for (const row of pending.due(now)) {
      const firstOfKey = !seenKeys.has(row.key);
      seenKeys.add(row.key);
      if (!firstOfKey || running.has(row.seq) || (handedBack.get(row.seq) ?? 0) > now) continue;
      ready.push(row);
      // Without tenants the oldest ready records win: no need to read the whole backlog.
      if (!opts.fairness && ready.length >= concurrency - running.size) break;
    }
    const picked = fair.pick(ready, concurrency - running.size, tenantOfRow);
    for (const row of picked) handedBack.delete(row.seq);
    return picked;
  };

  // One timer for the whole subscription, at the earliest moment something becomes due.
  const arm = (now: number): void => {
    let at = pending.nextDueAfter(now) ?? Infinity;
    for (const retryAt of handedBack.values()) if (retryAt > now && retryAt < at) at = retryAt;
    if (at === timerAt) return;
    clearTimeout(timer);
    timer = undefined;
    timerAt = at;
    if (at === Infinity) return;
    timer = setTimeout(
      () => {
        timer = undefined;
        timerAt = Infinity;
        pump();
      },
      Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())),
    ).unref();
  };

  const deliver = (row: PendingRow): void => {
    const { seq } = row;
    const record = pending.read(row);
    if (!record) {
      // Replaced by a newer record of its key since the scan: nothing left to deliver.
      fair.finished(tenantOfRow(row));
      tenants.delete(seq);
      return;
    }
    const tenant = tenantOfRow(row);
    const handled = new Promise<void>((resolve) =>
      resolve(
        opts.handler(record, {
          signal: abort.signal,
          heartbeat: async () => {},
          waitOnly: () => {},
          begin: () => Promise.resolve(),
        }),
      ),
    );
    const done = handled
      .then(
        () => {
          pending.ack(seq);
          tenants.delete(seq);
        },
        () => void handedBack.set(seq, Date.now() + redeliveryDelayMs),
      )
      .finally(() => {
        fair.finished(tenant);
        running.delete(seq);
        pumpSoon();
      });
    running.set(seq, done);
  };

  // A handler may publish synchronously, which wakes this pump again: that pass is run after
  // the current one instead of inside it, so no record is started twice.
  const pump = (): void => {
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        if (stopping) return;
        const now = Date.now();
        for (const row of pickDue(now)) deliver(row);
        arm(now);
      } while (pumpAgain);
    } finally {
      pumping = false;
    }
  };
  // Wake-ups and finished records of one event-loop turn share one pass: under a burst a
  // group commit resolves many handlers and publishes many records at once, and each pass
  // queries the file.
  let pumpQueued = false;
  const pumpSoon = (): void => {
    if (pumpQueued) return;
    pumpQueued = true;
    setImmediate(() => {
      pumpQueued = false;
      pump();
    });
  };
  // Woken by every commit that published to one of this group's topics (all of them if unsaid).
  const onRecord = (published?: ReadonlySet<string>): void => {
    if (!published || opts.topics.some((t) => published.has(t))) pumpSoon();
  };
  wake.on('record', onRecord);
  queueMicrotask(pump);
  // The one partition's lag, as Kafka's is reported: the records the group has not finished.
  const reportLag = (): void => {
    for (const topic of opts.topics) opts.onLag?.(topic, 0, pending.backlog(topic));
  };
  const lagTimer = opts.onLag ? setInterval(reportLag, LAG_REPORT_MS).unref() : undefined;
  if (opts.onLag) queueMicrotask(reportLag);

  return {
    async close(graceMs = 0): Promise<void> {
      stopping = true;
      clearTimeout(timer);
      clearInterval(lagTimer);
      wake.off('record', onRecord);
      const all = Promise.all(running.values());
      let graceTimer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((r) => (graceTimer = setTimeout(r, graceMs)))]);
      clearTimeout(graceTimer);
      abort.abort();
      await all;
    },
  };
}
