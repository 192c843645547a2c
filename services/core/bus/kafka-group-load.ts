import type { Admin } from 'kafkajs';
import type { SubscribeOptions } from './event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import type { MemberLoad } from './kafka-assigner.ts';
import type { RebalanceNudge } from './kafka-rebalance-nudge.ts';
import {
  marksQueued,
  partitionId,
  unsettled,
  waitsOnly,
  works,
  type PartitionTrack,
} from './kafka-window.ts';

/*
 * Watching the load of a subscription's group (kafka-subscription.ts): records that arrive after
 * an assignment land where their partition is, so a member may hold waiting records while another
 * has free slots. Three watches balance that between rebalances, each of which ends in a request
 * for one (kafka-rebalance-nudge.ts), and the leader then assigns by load (kafka-assigner.ts):
 * - crowding: a member whose slots are all busy and whose records wait asks to give them away;
 * - the idle watch: a member with room for work looks for records queued on other members;
 * - the load report: what a member tells the leader at each join.
 */

/** What the watches read of a subscription (kafka-subscription.ts's state). */
export interface MemberView {
  readonly tracks: ReadonlyMap<string, PartitionTrack>;
  /** Partitions (`topic:partition`) of the last group join. */
  readonly owned: ReadonlySet<string>;
  /** The records running here (only their count is read). */
  readonly running: { readonly size: number };
  readonly concurrency: number;
  readonly stopping: boolean;
  readonly options: Pick<SubscribeOptions, 'group' | 'freeForWork'>;
  readonly fullTopics: readonly string[];
  readonly admin: Admin;
  readonly log: Logger;
  readonly nudge: RebalanceNudge;
}

export interface GroupLoadWatch {
  /** A record started here: the idle watch's back-off starts over. */
  started(): void;
  /** Stops the watches (the subscription closes). */
  stop(): void;
}

const CROWD_CHECK_MS = 1000;
const IDLE_CHECK_MS = 1000;
const IDLE_NUDGE_FIRST_MS = 3000;
const IDLE_NUDGE_MAX_MS = 60_000;

/**
 * Starts the crowding check, every second, and the idle watch with it (when nothing waits here).
 * Each partition whose records only wait, and could move, is marked so in its commit metadata
 * (`markQueued` commits the track after `track.queued` changed), so that a member with room for
 * work and nothing waiting of its own sees it (watchIdle).
 */
export function watchGroupLoad(
  member: MemberView,
  markQueued: (track: PartitionTrack) => void,
): GroupLoadWatch {
  const crowd = createCrowdWatch();
  const idle = createIdleWatch(member);
  const timer = setInterval(() => {
    if (member.stopping) return;
    const { movable, anyWaiting, parked } = scanWindow(member, markQueued);
    // Busy: every slot taken, or handlers that only wait for this member's capacity.
    const crowded = movable && (member.running.size >= member.concurrency || parked);
    if (crowd.check(Date.now(), crowded, anyWaiting))
      member.nudge.request('records wait while every slot is busy');
    if (!anyWaiting) idle.check();
  }, CROWD_CHECK_MS);
  timer.unref();
  return { started: idle.reset, stop: () => clearInterval(timer) };
}

/** What waits in the window, and the queued marks brought up to date on the way. */
function scanWindow(
  member: MemberView,
  markQueued: (track: PartitionTrack) => void,
): { movable: boolean; anyWaiting: boolean; parked: boolean } {
  let movable = false;
  let anyWaiting = false;
  let parked = false;
  for (const track of member.tracks.values()) {
    const waiting = track.items.some((i) => waitsOnly(i));
    const couldMove = waiting && !track.items.some((i) => works(i));
    anyWaiting ||= waiting;
    parked ||= track.items.some((i) => i.state === 'running' && i.movable === true);
    movable ||= couldMove;
    if (track.queued !== couldMove) {
      track.queued = couldMove;
      markQueued(track);
    }
  }
  return { movable, anyWaiting, parked };
}

/**
 * When a member whose slots are all busy should ask for a rebalance: once records have waited in
 * its window on partitions it could give away (no running record there) for `firstAfterMs`, then
 * again only after twice as long each time it is still crowded (up to `maxAfterMs`), so a backlog
 * that keeps every member busy costs a few rebalances, not a stream of them. Reset once nothing
 * waits. Another member with a free slot then gets those partitions (kafka-assigner.ts).
 */
export function createCrowdWatch(options: { firstAfterMs?: number; maxAfterMs?: number } = {}): {
  /** True when a rebalance is due now. */
  check(now: number, crowded: boolean, anyWaiting: boolean): boolean;
} {
  const first = options.firstAfterMs ?? 3000;
  const max = options.maxAfterMs ?? 120_000;
  let since: number | undefined;
  let after = first;
  return {
    check(now, crowded, anyWaiting) {
      if (!crowded) {
        since = undefined;
        if (!anyWaiting) after = first;
        return false;
      }
      since ??= now;
      if (now - since < after) return false;
      since = now;
      after = Math.min(after * 2, max);
      return true;
    },
  };
}

/**
 * A member with room for work looks for records queued on other members' partitions (one read of
 * the group's commits); after a nudge that brought it nothing it waits longer (doubling), until
 * it starts a record again (`reset`).
 */
function createIdleWatch(member: MemberView): { check: () => void; reset: () => void } {
  let checking = false;
  let nextAt = 0;
  let afterMs = IDLE_NUDGE_FIRST_MS;
  return {
    reset: () => {
      afterMs = IDLE_NUDGE_FIRST_MS;
    },
    check: () => {
      const room = member.options.freeForWork?.() ?? member.concurrency - member.running.size;
      if (room <= 0 || checking || Date.now() < nextAt) return;
      checking = true;
      queuedElsewhere(member)
        .then((found) => {
          if (!found || member.stopping) {
            nextAt = Date.now() + IDLE_CHECK_MS;
            return;
          }
          member.nudge.request('a slot is free while records wait on another member');
          nextAt = Date.now() + afterMs;
          afterMs = Math.min(afterMs * 2, IDLE_NUDGE_MAX_MS);
        })
        .catch((error: unknown) => {
          member.log.debug('kafka.idle_check_failed', { error });
          nextAt = Date.now() + IDLE_CHECK_MS;
        })
        .finally(() => (checking = false));
    },
  };
}

async function queuedElsewhere(member: MemberView): Promise<boolean> {
  const res = await member.admin.fetchOffsets({
    groupId: member.options.group,
    topics: [...member.fullTopics],
  });
  return res.some(({ topic, partitions }) =>
    partitions.some(
      (p) => marksQueued(p.metadata) && !member.owned.has(partitionId(topic, p.partition)),
    ),
  );
}

/**
 * What this member tells the group leader as it joins (kafka-assigner.ts), and the partitions it
 * reports busy: until the assignment arrives it may start records of those alone (`busy`).
 */
export function reportLoad(
  member: MemberView | undefined,
  slots: number,
): { load: MemberLoad; busy: Set<string> } {
  const busy = new Set<string>();
  const waiting: Record<string, number> = {};
  for (const [id, track] of member?.tracks ?? []) {
    // Finished records no commit names yet pin their partition too: its next owner would run
    // them again.
    if (unsettled(track)) busy.add(id);
    for (const item of track.items) {
      if (works(item)) busy.add(id);
      else if (waitsOnly(item)) waiting[id] = (waiting[id] ?? 0) + 1;
    }
  }
  const free = member?.options.freeForWork?.();
  member?.log.debug('kafka.join_load', {
    busy: busy.size,
    waiting: Object.keys(waiting).length,
    free,
  });
  const load: MemberLoad = {
    slots,
    running: member?.running.size ?? 0,
    ...(free === undefined ? {} : { free: Math.max(0, free) }),
    busy: [...busy],
    waiting,
    stopping: member?.stopping ?? false,
    nudge: false,
  };
  return { load, busy };
}
