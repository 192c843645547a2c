import { DatabaseSync } from 'node:sqlite';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { EventEmitter } from 'node:events';
import {
  BusUnavailableError,
  compactedTopics,
  type BusRecord,
  type EventBus,
  type OutgoingRecord,
  type SubscribeOptions,
  type Subscription,
  type TailOptions,
} from './event-bus.ts';
import { createGroupCommit } from './group-commit.ts';
import {
  runEmbeddedSubscription,
  type PendingRecords,
  type PendingRow,
} from './embedded-subscription.ts';

export interface EmbeddedBusOptions {
  /** SQLite file; ':memory:' keeps nothing across restarts (tests). */
  path: string;
  /** Records older than this (and past their due time) are deleted, ms (default 7 days). */
  retentionMs?: number;
  /** Wait before a handed-back record is delivered again, ms (default 1000). */
  redeliveryDelayMs?: number;
  /**
   * How long a publish waits for others to share its transaction, ms (default 0: the records
   * published in one event-loop turn, which includes every request that arrived while the
   * previous transaction was being written, share one commit).
   */
  commitWindowMs?: number;
}

/**
 * The all-in-one bus: one process, records in a SQLite file, so accepted jobs survive a
 * restart. A record is acknowledged per consumer group once its handler resolves; on start a
 * group gets every record it has not acknowledged. One member per group (one process).
 *
 * A record published with `notBefore` gets a due-time column (`due`, epoch ms; 0 for records
 * due at once) and is left out of every query until then; a timer wakes the subscriptions at
 * the earliest future due time, so nothing polls and a waiting record holds no slot.
 *
 * Hand-written rather than a queue library: it is the only bus that needs no server, and the
 * durable acknowledgement, due times and per-group acks map onto three small SQLite tables.
 *
 * Publishes are group-committed (group-commit.ts): each resolves only after the transaction
 * holding its records is on disk (synchronous = FULL), but concurrent publishes share it.
 */
export function createEmbeddedBus(options: EmbeddedBusOptions): EventBus {
  if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
  const db = new DatabaseSync(options.path);
  migrate(db);
  const maxSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM records');
  const wake = new EventEmitter().setMaxListeners(0);
  const subscriptions = new Set<Subscription>();
  let closed = false;

  const retentionMs = options.retentionMs ?? 7 * 24 * 3600_000;
  pruneOld(db, retentionMs);
  const pruneTimer = setInterval(() => pruneOld(db, retentionMs), 3600_000).unref();
  const commit = recordWriter(db, wake, () => closed);
  // Acknowledgements ride in the same transactions: one fsync per event-loop turn for all the
  // records published and handled in it, instead of one per record.
  const commits = createGroupCommit<Write>({
    lingerMs: options.commitWindowMs ?? 0,
    write: async (writes) => commit(writes),
  });

  const bus: EventBus = {
    async publish(records: readonly OutgoingRecord[]): Promise<void> {
      if (closed) throw new BusUnavailableError('the embedded bus is closed');
      await commits.add(records);
    },

    async subscribe(opts: SubscribeOptions): Promise<Subscription> {
      if (closed) throw new BusUnavailableError('the embedded bus is closed');
      db.prepare('INSERT OR IGNORE INTO groups (grp, start_seq) VALUES (?, ?)').run(
        opts.group,
        opts.fromBeginning ? 0 : (maxSeq.get() as { seq: number }).seq,
      );
      const sub = runEmbeddedSubscription(
        opts,
        pendingRecords(db, opts.group, opts.topics, (seq) =>
          commits.add([{ group: opts.group, seq }]),
        ),
        wake,
        options.redeliveryDelayMs ?? 1000,
      );
      subscriptions.add(sub);
      return {
        close: async (graceMs) => {
          subscriptions.delete(sub);
          await sub.close(graceMs);
        },
      };
    },

    async tail(opts): Promise<Subscription> {
      if (closed) throw new BusUnavailableError('the embedded bus is closed');
      const sub = runEmbeddedTail(db, wake, opts);
      subscriptions.add(sub);
      await sub.ready;
      return {
        close: async () => {
          subscriptions.delete(sub);
          await sub.close();
        },
      };
    },

    async isReady(): Promise<boolean> {
      return !closed;
    },

    async close(): Promise<void> {
      if (closed) return;
      await Promise.all([...subscriptions].map((s) => s.close(0)));
      // Publishes already accepted are written (or failed) before the file closes.
      await commits.drain();
      closed = true;
      clearInterval(pruneTimer);
      db.close();
    },
  };
  return bus;
}

/** Removes records older than the retention (and their acknowledgements), unless still to come. */
function pruneOld(db: DatabaseSync, retentionMs: number): void {
  const cutoff = Date.now() - retentionMs;
  // A record scheduled further out than the retention is kept until it is due.
  const old = 'SELECT seq FROM records WHERE at < ? AND due < ?';
  db.prepare(`DELETE FROM acks WHERE ${ACKS_OF} IN (${old})`).run(cutoff, cutoff);
  db.prepare(`DELETE FROM records WHERE seq IN (${old})`).run(cutoff, cutoff);
}

/**
 * Writes one group commit (records and acknowledgements) in one transaction, then wakes the
 * readers of the topics it published to.
 */
function recordWriter(
  db: DatabaseSync,
  wake: EventEmitter,
  isClosed: () => boolean,
): (writes: readonly Write[]) => void {
  const insert = db.prepare(
    'INSERT INTO records (topic, key, value, headers, at, due) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const compact = compactionStatements(db);
  const ackStatement = db.prepare('INSERT OR IGNORE INTO acks (grp, seq) VALUES (?, ?)');
  return (writes) => {
    if (isClosed()) throw new BusUnavailableError('the embedded bus is closed');
    const now = Date.now();
    const published = new Set<string>();
    db.exec('BEGIN');
    try {
      for (const w of writes) {
        if ('group' in w) {
          ackStatement.run(w.group, w.seq);
          continue;
        }
        // Due at once is stored as 0, so that the common case stays on the sequence index.
        const due = w.notBefore !== undefined && w.notBefore > now ? w.notBefore : 0;
        compact.get(w.topic)?.(w.key);
        insert.run(w.topic, w.key, w.value, JSON.stringify(w.headers ?? {}), now, due);
        published.add(w.topic);
      }
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw new BusUnavailableError(
        `the embedded bus could not store the records: ${(error as Error).message}`,
        { cause: error },
      );
    }
    // Only the readers of these topics look again: a commit costs the others nothing.
    if (published.size > 0) wake.emit('record', published);
  };
}

/**
 * The acknowledgements of some records, followed by `IN (…seq…)`: naming every group lets SQLite
 * search the (grp, seq) key instead of scanning all acknowledgements once per deleted record.
 */
const ACKS_OF = 'grp IN (SELECT grp FROM groups) AND seq';

/** One write of a group commit: a record to publish, or a group's acknowledgement of one. */
type Write = OutgoingRecord | { group: string; seq: number };

function migrate(db: DatabaseSync): void {
  db.exec(`
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = FULL;
    CREATE TABLE IF NOT EXISTS records (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL,
      key TEXT NOT NULL, value BLOB NOT NULL, headers TEXT NOT NULL, at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS records_topic ON records (topic, seq);
    CREATE TABLE IF NOT EXISTS acks (grp TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (grp, seq));
    CREATE TABLE IF NOT EXISTS groups (grp TEXT PRIMARY KEY, start_seq INTEGER NOT NULL);
  `);
  // Files written before due times existed have no such column; their records are all due.
  const columns = db.prepare('PRAGMA table_info(records)').all() as { name: string }[];
  if (!columns.some((c) => c.name === 'due'))
    db.exec('ALTER TABLE records ADD COLUMN due INTEGER NOT NULL DEFAULT 0');
  db.exec('CREATE INDEX IF NOT EXISTS records_scheduled ON records (topic, due) WHERE due > 0');
}

/** One topic's records due at once, page by page from its first page, in sequence order. */
function* pagesFrom(
  first: PendingRow[],
  page: (after: number, rows: number) => PendingRow[],
): Generator<PendingRow, void, undefined> {
  let rows = first;
  let size = FIRST_PAGE_ROWS;
  for (;;) {
    yield* rows;
    const last = rows.at(-1);
    if (rows.length < size || !last) return;
    size = Math.min(size * 4, MAX_PAGE_ROWS);
    rows = page(last.seq, size);
  }
}

/**
 * The queries of one group over its topics. The scan of each topic starts at its floor (below
 * it, every record due at once is acknowledged), plus the few scheduled records, instead of at
 * the start of the retained history.
 *
 * The records due at once are read per topic in growing pages on the (topic, seq) index, merged by
 * sequence number as the caller iterates, so a pass that needs a few records reads a page, not
 * the whole backlog: a group that lags (the status writer under a burst) would otherwise re-read
 * and sort everything it has not acknowledged at every wake-up.
 */
function pendingRecords(
  db: DatabaseSync,
  group: string,
  topics: readonly string[],
  writeAck: (seq: number) => Promise<void>,
): PendingRecords {
  const inTopics = `r.topic IN (${topics.map(() => '?').join(', ')})`;
  const unacked = 'NOT EXISTS (SELECT 1 FROM acks a WHERE a.grp = ? AND a.seq = r.seq)';
  const columns = 'r.seq, r.topic, r.key';
  const whole = db.prepare('SELECT value, headers FROM records WHERE seq = ?');
  const startSeq = (
    db.prepare('SELECT start_seq FROM groups WHERE grp = ?').get(group) as { start_seq: number }
  ).start_seq;
  const immediate = db.prepare(
    `SELECT ${columns} FROM records r
       WHERE r.topic = ? AND r.seq > ? AND r.due = 0 AND ${unacked}
       ORDER BY r.seq LIMIT ?`,
  );
  // `due > 0` spelled out lets SQLite use the partial index of scheduled records; with only
  // `due > ?` it scans every pending record of the topics, at each wake-up of each group.
  const scheduled = db.prepare(
    `SELECT ${columns} FROM records r
       WHERE ${inTopics} AND r.due > 0 AND r.due <= ? AND r.seq > ? AND ${unacked}
       ORDER BY r.seq`,
  );
  const nextDue = db.prepare(
    `SELECT MIN(r.due) AS due FROM records r
       WHERE ${inTopics} AND r.due > 0 AND r.due > ? AND r.seq > ? AND ${unacked}`,
  );
  const maxSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM records');
  const unackedCount = db.prepare(
    `SELECT COUNT(*) AS n FROM records r WHERE r.topic = ? AND r.seq > ? AND ${unacked}`,
  );
  // Acknowledged, not yet written: left out of the scans meanwhile, so the record is not
  // delivered twice; an ack that fails to be written makes its record due again (at least once).
  const acking = new Set<number>();
  /**
   * Per topic, a sequence number below which every record due at once is acknowledged. Per topic,
   * not per group: one old unacknowledged record of one topic must not make the scan of another
   * topic walk over all the records it acknowledged since.
   */
  const floors = new Map<string, number>();

  const page = (topic: string, after: number, rows: number): PendingRow[] =>
    immediate.all(topic, after, group, rows) as unknown as PendingRow[];

  return {
    *due(now) {
      // Every first page is read before anything is yielded, so each floor comes from one state
      // of the file: below the topic's first unacknowledged record, or its newest if none.
      const newest = (maxSeq.get() as { seq: number }).seq;
      const sources: Iterator<PendingRow>[] = [
        (scheduled.all(...topics, now, startSeq, group) as unknown as PendingRow[]).values(),
      ];
      for (const topic of topics) {
        const first = page(topic, floors.get(topic) ?? startSeq, FIRST_PAGE_ROWS);
        floors.set(topic, first[0] ? first[0].seq - 1 : newest);
        sources.push(pagesFrom(first, (after, rows) => page(topic, after, rows)));
      }
      for (const row of mergeBySeq(sources)) if (!acking.has(row.seq)) yield row;
    },
    nextDueAfter(now) {
      return (
        (nextDue.get(...topics, now, startSeq, group) as { due: number | null }).due ?? undefined
      );
    },
    backlog(topic) {
      const after = floors.get(topic) ?? startSeq;
      return (unackedCount.get(topic, after, group) as { n: number }).n;
    },
    read(row) {
      const found = whole.get(row.seq) as StoredBody | undefined;
      return found && busRecord(row.topic, row.key, found);
    },
    ack(seq) {
      acking.add(seq);
      void writeAck(seq)
        .catch(() => undefined)
        .finally(() => acking.delete(seq));
    },
  };
}

/**
 * Rows read per query when scanning a topic's pending records: a pass usually needs one or two
 * (a slot freed), so the first page is small and the next ones grow for a pass that reads on.
 */
const FIRST_PAGE_ROWS = 4;
const MAX_PAGE_ROWS = 256;

/** A record's value and headers as stored. */
interface StoredBody {
  value: Uint8Array;
  headers: string;
}

const busRecord = (topic: string, key: string, body: StoredBody): BusRecord => ({
  topic,
  key,
  value: Buffer.from(body.value),
  headers: JSON.parse(body.headers) as Record<string, string>,
});

/** Merges iterators that are each in sequence order into one in sequence order. */
function* mergeBySeq(sources: Iterator<PendingRow>[]): Generator<PendingRow> {
  const heads = sources.map((it) => ({ it, row: nextOf(it) }));
  for (;;) {
    let best: (typeof heads)[number] | undefined;
    for (const h of heads) if (h.row && (!best?.row || h.row.seq < best.row.seq)) best = h;
    if (!best?.row) return;
    yield best.row;
    best.row = nextOf(best.it);
  }
}

const nextOf = (it: Iterator<PendingRow>): PendingRow | undefined => {
  const r = it.next();
  return r.done ? undefined : r.value;
};

/**
 * Compaction at publish: a record of a compacted topic replaces the older ones of its key, in
 * the same transaction, so the topic holds one record per key. Each statement names its topic
 * literally, so that SQLite uses the partial index on that topic's keys.
 */
function compactionStatements(db: DatabaseSync): Map<string, (key: string) => void> {
  const statements = new Map<string, (key: string) => void>();
  let i = 0;
  for (const topic of compactedTopics) {
    const literal = `'${topic.replaceAll("'", "''")}'`;
    db.exec(
      `CREATE INDEX IF NOT EXISTS records_compacted_${i++} ON records (key) WHERE topic = ${literal}`,
    );
    const older = `SELECT seq FROM records WHERE topic = ${literal} AND key = ?`;
    const dropAcks = db.prepare(`DELETE FROM acks WHERE ${ACKS_OF} IN (${older})`);
    const dropRecords = db.prepare(`DELETE FROM records WHERE topic = ${literal} AND key = ?`);
    statements.set(topic, (key) => {
      dropAcks.run(key);
      dropRecords.run(key);
    });
  }
  return statements;
}

interface TailRow extends StoredBody {
  seq: number;
  key: string;
}

/**
 * EventBus.tail on the embedded bus: the newest `last` records of each topic, then every new
 * one as it is published (woken like the subscriptions), by sequence number per topic.
 */
function runEmbeddedTail(
  db: DatabaseSync,
  wake: EventEmitter,
  opts: TailOptions,
): Subscription & { ready: Promise<void> } {
  const cursors = opts.topics.map(({ topic, last }) => {
    const row = db
      .prepare('SELECT seq FROM records WHERE topic = ? ORDER BY seq DESC LIMIT 1 OFFSET ?')
      .get(topic, Math.max(0, last)) as { seq: number } | undefined;
    const start =
      last > 0
        ? (row?.seq ?? 0)
        : (db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM records').get() as { seq: number })
            .seq;
    return { topic, after: start };
  });
  const next = db.prepare(
    `SELECT seq, key, value, headers FROM records
       WHERE topic = ? AND seq > ? AND due = 0 ORDER BY seq LIMIT 1000`,
  );
  let stopped = false;
  const readAll = async (): Promise<void> => {
    for (const cursor of cursors) {
      for (;;) {
        if (stopped) return;
        const rows = next.all(cursor.topic, cursor.after) as unknown as TailRow[];
        for (const row of rows) {
          const record = busRecord(cursor.topic, row.key, row);
          // Like Kafka's tail: one record that cannot be handled is skipped, not retried.
          await opts.handler(record).catch(() => undefined);
          cursor.after = row.seq;
        }
        if (rows.length < 1000) break;
      }
    }
  };
  // One pass at a time; a pass reads up to the newest record, so passes queued meanwhile are short.
  let reading = readAll();
  const onRecord = (published?: ReadonlySet<string>): void => {
    if (stopped || (published && !cursors.some((c) => published.has(c.topic)))) return;
    reading = reading.then(readAll);
  };
  wake.on('record', onRecord);
  return {
    ready: reading,
    async close() {
      stopped = true;
      wake.off('record', onRecord);
      await reading;
    },
  };
}
