import type { BusRecord } from './event-bus.ts';

/*
 * The window of a Kafka subscription (the pattern of Confluent's Parallel Consumer): records
 * fetched from every partition this member owns, up to `limit` not yet finished, any of which
 * may start when a slot frees. Each partition is committed only up to its first unfinished
 * record; the records finished beyond that point travel in the commit's metadata, so that after
 * a crash or a rebalance the next owner skips them instead of running them again.
 */

export type ItemState = 'waiting' | 'running' | 'done';

export interface WindowItem {
  topic: string;
  partition: number;
  offset: bigint;
  key: string;
  tenant: string;
  /** Dropped once done: a finished record holds no bytes, only its place. */
  record: BusRecord | undefined;
  state: ItemState;
  /** Running, but its handler only waits (DeliveryContext.waitOnly): its partition may move. */
  movable?: boolean;
  /** A handed-back record waits until then (epoch ms) before it may start again. */
  retryAt: number;
  /** Fetch order across partitions: the oldest ready record wins ties. */
  arrival: number;
}

export interface PartitionTrack {
  topic: string;
  partition: number;
  /** Records of this partition in the window, by offset (finished ones until the head passes). */
  items: WindowItem[];
  /**
   * Offsets beyond the committed one that are finished but no longer in `items`: named in the
   * commit metadata by an earlier owner, or finished here and passed by the head before a commit
   * covering them succeeded (a failed commit must not make them run again when refetched).
   */
  doneBefore: Set<bigint>;
  /** The last commit this member made or read: offset and metadata. */
  committed: { offset: bigint; metadata: string } | undefined;
  /** Offset one past the newest record seen (fetched, skipped or finished). */
  next: bigint | undefined;
  /** High watermark of the last fetch, for the lag. */
  highWatermark: bigint | undefined;
  /**
   * Records of the partition only wait here and could move (none of them works): marked in the
   * commit metadata, so that a member with a free slot sees them (`marksQueued`).
   */
  queued: boolean;
}

const META_PREFIX = 'pc1:';
const MAX_METADATA = 4000;
// After the list, so a reader of the list alone (parseInt stops at ';') still reads it.
const QUEUED_MARK = ';q';

/** Commit metadata naming finished offsets beyond `base`, as base-36 distances from it. */
export function encodeDone(base: bigint, done: readonly bigint[]): string {
  return META_PREFIX + done.map((o) => (o - base).toString(36)).join(',');
}

export function decodeDone(base: bigint, metadata: string | null | undefined): Set<bigint> {
  const out = new Set<bigint>();
  if (!metadata?.startsWith(META_PREFIX)) return out;
  let list = metadata.slice(META_PREFIX.length);
  if (list.endsWith(QUEUED_MARK)) list = list.slice(0, -QUEUED_MARK.length);
  for (const part of list.split(',')) {
    const n = Number.parseInt(part, 36);
    if (Number.isSafeInteger(n) && n > 0) out.add(base + BigInt(n));
  }
  return out;
}

/** Whether a partition's commit says records wait on it for a slot (PartitionTrack.queued). */
export function marksQueued(metadata: string | null | undefined): boolean {
  return metadata?.startsWith(META_PREFIX) === true && metadata.endsWith(QUEUED_MARK);
}

export function newTrack(
  topic: string,
  partition: number,
  committed: { offset: bigint; metadata: string } | undefined,
): PartitionTrack {
  return {
    topic,
    partition,
    items: [],
    doneBefore: committed ? decodeDone(committed.offset, committed.metadata) : new Set(),
    committed,
    next: committed?.offset,
    highWatermark: undefined,
    // What the last commit says, so that a new owner clears a mark its records no longer earn.
    queued: marksQueued(committed?.metadata),
  };
}

/** What to do with a fetched offset: keep it, skip it as already seen or finished. */
export function admit(track: PartitionTrack, offset: bigint): 'new' | 'seen' | 'finished' {
  if (track.committed && offset < track.committed.offset) return 'seen';
  if (track.items.some((i) => i.offset === offset)) return 'seen';
  if (track.doneBefore.has(offset)) return 'finished';
  return 'new';
}

/**
 * The records that may start now, oldest first: waiting and due, and the first unfinished
 * record of their key (one key lives in one partition, so order per key holds).
 */
export function readyItems(tracks: Iterable<PartitionTrack>, now: number): WindowItem[] {
  const ready: WindowItem[] = [];
  for (const track of tracks) {
    const blocked = new Set<string>();
    for (const item of track.items) {
      if (item.state === 'done') continue;
      if (blocked.has(item.key)) continue;
      blocked.add(item.key);
      if (item.state === 'waiting' && item.retryAt <= now) ready.push(item);
    }
  }
  return ready.sort((a, b) => a.arrival - b.arrival);
}

/**
 * The commit this partition is due: its first unfinished offset, and the finished offsets
 * beyond it in the metadata. Finished records at the head leave the window. Undefined when
 * nothing changed since the last commit.
 */
export function commitPoint(
  track: PartitionTrack,
): { offset: bigint; metadata: string } | undefined {
  while (track.items[0]?.state === 'done') {
    const passed = track.items.shift();
    if (passed) track.doneBefore.add(passed.offset);
  }
  const head = track.items[0];
  const base = head ? head.offset : track.next;
  if (base === undefined) return undefined;
  const done = track.items.filter((i) => i.state === 'done').map((i) => i.offset);
  for (const o of track.doneBefore) if (o >= base && !done.includes(o)) done.push(o);
  let metadata = done.length > 0 ? encodeDone(base, done.sort(cmp)) : '';
  // Brokers cap metadata (offset.metadata.max.bytes, 4096 by default): past that, finished
  // records beyond the head would run again after a crash, as without the metadata.
  if (metadata.length > MAX_METADATA) metadata = '';
  if (track.queued) metadata = (metadata || META_PREFIX) + QUEUED_MARK;
  const last = track.committed;
  if (last && last.offset === base && last.metadata === metadata) return undefined;
  return { offset: base, metadata };
}

/** After a successful commit: what it covers needs no remembering (`admit` says 'seen'). */
export function forgetCommitted(track: PartitionTrack): void {
  forgetBelow(track.doneBefore, track.committed?.offset);
}

/** Every offset of the partition known finished and not yet covered by a commit. */
export function finishedOffsets(track: PartitionTrack): Set<bigint> {
  const out = new Set(track.doneBefore);
  for (const i of track.items) if (i.state === 'done') out.add(i.offset);
  forgetBelow(out, track.committed?.offset);
  return out;
}

function forgetBelow(offsets: Set<bigint>, offset: bigint | undefined): void {
  if (offset === undefined) return;
  for (const o of [...offsets]) if (o < offset) offsets.delete(o);
}

function cmp(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Records in the window that still hold a place (waiting or running). */
export function windowCount(tracks: Iterable<PartitionTrack>): number {
  let n = 0;
  for (const t of tracks) for (const i of t.items) if (i.state !== 'done') n += 1;
  return n;
}

/** The id of a partition in a subscription's maps: `topic:partition`. */
export const partitionId = (topic: string, partition: number): string => `${topic}:${partition}`;

/** A record whose handler works: its partition stays with this member until it ends. */
export const works = (i: WindowItem): boolean => i.state === 'running' && i.movable !== true;

/** A record not started, or whose handler only waits (waitOnly): it may move to another member. */
export const waitsOnly = (i: WindowItem): boolean =>
  i.state === 'waiting' || (i.state === 'running' && i.movable === true);

/** Whether the partition has finished records that its last successful commit does not cover. */
export function unsettled(track: PartitionTrack): boolean {
  const finished = finishedOffsets(track);
  if (finished.size === 0) return false;
  const last = track.committed;
  if (!last) return true;
  const covered = decodeDone(last.offset, last.metadata);
  return [...finished].some((o) => !covered.has(o));
}
