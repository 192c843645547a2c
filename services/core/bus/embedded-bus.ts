import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { EventEmitter } from 'node:events';
import {
  BusUnavailableError,
  type BusRecord,
  type EventBus,
  type OutgoingRecord,
  type SubscribeOptions,
  type Subscription,
} from './event-bus.ts';

export interface EmbeddedBusOptions {
  /** SQLite file; ':memory:' keeps nothing across restarts (tests). */
  path: string;
  /** Records older than this are deleted (default 7 days). */
  retentionMs?: number;
  /** Wait before a handed-back record is delivered again (default 1 s). */
  redeliveryDelayMs?: number;
}

interface Row {
  seq: number;
  topic: string;
  key: string;
  value: Uint8Array;
  headers: string;
}

/**
 * The all-in-one bus: one process, records in a SQLite file, so accepted jobs survive a
 * restart. A record is acknowledged per consumer group once its handler resolves; on start a
 * group gets every record it has not acknowledged. One member per group (one process).
 */
export function createEmbeddedBus(options: EmbeddedBusOptions): EventBus {
  if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
  const db = new DatabaseSync(options.path);
  db.exec(`
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = FULL;
    CREATE TABLE IF NOT EXISTS records (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL,
      key TEXT NOT NULL, value BLOB NOT NULL, headers TEXT NOT NULL, at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS records_topic ON records (topic, seq);
    CREATE TABLE IF NOT EXISTS acks (grp TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (grp, seq));
    CREATE TABLE IF NOT EXISTS groups (grp TEXT PRIMARY KEY, start_seq INTEGER NOT NULL);
  `);
  const insert = db.prepare('INSERT INTO records (topic, key, value, headers, at) VALUES (?, ?, ?, ?, ?)');
  const ack = db.prepare('INSERT OR IGNORE INTO acks (grp, seq) VALUES (?, ?)');
  const maxSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM records');
  const wake = new EventEmitter().setMaxListeners(0);
  const subscriptions = new Set<Subscription>();
  let closed = false;

  const retentionMs = options.retentionMs ?? 7 * 24 * 3600_000;
  const prune = (): void => {
    const cutoff = Date.now() - retentionMs;
    db.prepare('DELETE FROM acks WHERE seq IN (SELECT seq FROM records WHERE at < ?)').run(cutoff);
    db.prepare('DELETE FROM records WHERE at < ?').run(cutoff);
  };
  prune();
  const pruneTimer = setInterval(prune, 3600_000).unref();

  const bus: EventBus = {
    async publish(records: readonly OutgoingRecord[]): Promise<void> {
      if (closed) throw new BusUnavailableError('the embedded bus is closed');
      db.exec('BEGIN');
      try {
        for (const r of records) insert.run(r.topic, r.key, r.value, JSON.stringify(r.headers ?? {}), Date.now());
        db.exec('COMMIT');
      } catch (error) {
        db.exec('ROLLBACK');
        throw new BusUnavailableError(`the embedded bus could not store the records: ${(error as Error).message}`);
      }
      wake.emit('record');
    },

    async subscribe(opts: SubscribeOptions): Promise<Subscription> {
      if (closed) throw new BusUnavailableError('the embedded bus is closed');
      db.prepare('INSERT OR IGNORE INTO groups (grp, start_seq) VALUES (?, ?)').run(
        opts.group,
        opts.fromBeginning ? 0 : (maxSeq.get() as { seq: number }).seq,
      );
      const placeholders = opts.topics.map(() => '?').join(', ');
      const next: StatementSync = db.prepare(
        `SELECT r.seq, r.topic, r.key, r.value, r.headers FROM records r
         WHERE r.topic IN (${placeholders}) AND r.seq > MAX(?, (SELECT start_seq FROM groups WHERE grp = ?))
           AND NOT EXISTS (SELECT 1 FROM acks a WHERE a.grp = ? AND a.seq = r.seq)
         ORDER BY r.seq LIMIT 1`,
      );
      const sub = runSubscription(opts, (after) => next.get(...opts.topics, after, opts.group, opts.group) as Row | undefined, (seq) => {
        ack.run(opts.group, seq);
      }, wake, options.redeliveryDelayMs ?? 1000);
      subscriptions.add(sub);
      return {
        close: async (graceMs) => {
          subscriptions.delete(sub);
          await sub.close(graceMs);
        },
      };
    },

    async isReady(): Promise<boolean> {
      return !closed;
    },

    async close(): Promise<void> {
      if (closed) return;
      await Promise.all([...subscriptions].map((s) => s.close(0)));
      closed = true;
      clearInterval(pruneTimer);
      db.close();
    },
  };
  return bus;
}

function runSubscription(
  opts: SubscribeOptions,
  nextAfter: (seq: number) => Row | undefined,
  commit: (seq: number) => void,
  wake: EventEmitter,
  redeliveryDelayMs: number,
): Subscription {
  const concurrency = opts.concurrency ?? 1;
  const abort = new AbortController();
  const running = new Map<number, Promise<void>>();
  const handedBack = new Set<number>();
  let cursor = 0;
  let stopping = false;

  const pump = (): void => {
    while (!stopping && running.size < concurrency) {
      const row = nextAfter(cursor);
      if (!row) return;
      cursor = row.seq;
      if (running.has(row.seq) || handedBack.has(row.seq)) continue;
      const record: BusRecord = {
        topic: row.topic,
        key: row.key,
        value: Buffer.from(row.value),
        headers: JSON.parse(row.headers) as Record<string, string>,
      };
      const seq = row.seq;
      const done = opts.handler(record, { signal: abort.signal, heartbeat: async () => {} }).then(
        () => commit(seq),
        () => {
          // Handed back: deliver again after a pause, from this record on.
          handedBack.add(seq);
          setTimeout(() => {
            handedBack.delete(seq);
            cursor = Math.min(cursor, seq - 1);
            pump();
          }, redeliveryDelayMs).unref();
        },
      ).finally(() => {
        running.delete(seq);
        pump();
      });
      running.set(seq, done);
    }
  };
  const onRecord = (): void => pump();
  wake.on('record', onRecord);
  queueMicrotask(pump);

  return {
    async close(graceMs = 0): Promise<void> {
      stopping = true;
      wake.off('record', onRecord);
      const all = Promise.all(running.values());
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
      abort.abort();
      await all;
    },
  };
}
