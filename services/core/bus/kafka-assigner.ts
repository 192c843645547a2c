import kafkajs, { type Assigner, type GroupMember, type PartitionAssigner } from 'kafkajs';

/*
 * Design: running work stays where it runs (issue 22).
 *
 * kafkajs rebalances eagerly: at every join or leave the group leader assigns every partition
 * afresh, and a member that loses a partition must abort the jobs it runs from it, which its new
 * owner starts again from zero (minutes of encoding thrown away each time, and most often when an
 * autoscaler adds workers because the backlog is long). Two routes keep a running job with its
 * worker:
 *
 * - KIP-848 (the broker-side consumer protocol of Kafka 4.x), where a member gives a revoked
 *   partition up when it acknowledges the revocation, so it could hold it until its job ends.
 *   In Node only Confluent's client (librdkafka, a native module, `group.protocol=consumer`
 *   since 1.6) speaks it. Its assignors run on the broker and know nothing of the jobs: the
 *   partition they move may be the busy one (the newcomer then waits for that job to end) while
 *   partitions of waiting records stay put, the opposite of what the issue asks; and the move
 *   would replace every consumer of the project (the bus, the tail, the delay forwarder). Not
 *   built, not measured.
 * - A partition assigner in kafkajs (`partitionAssigners`), chosen here. The classic protocol
 *   lets each member send user data with its join, and the leader runs the assignment: so each
 *   member reports, at every join, the partitions on which it runs a job (or has finished one
 *   that no successful commit names yet: its next owner would run it again), its slots and its
 *   running count, and how many fetched records of each partition are only waiting. The leader
 *   then (1) leaves every partition with a running job to the member running it (a partition
 *   with a running record cannot move without that job starting again: the next owner reads
 *   from the committed offset, which is before it); (2) gives the partitions holding waiting
 *   records to the members with the most free slots (a newcomer, typically), so new capacity
 *   gets work at once. A record whose handler only waits counts as waiting (a media job that is
 *   downloading its input or queued for a CPU slot: DeliveryContext.waitOnly), and a member's
 *   free slots are capped by the work it could begin at once (`free`: its free CPU slots less
 *   the jobs it holds that will take one), so a prefetching worker gets no record it would only
 *   queue; where no member has room, waiting records stay with the member holding them; (3) spreads the idle partitions so every member owns about as many,
 *   ready for what arrives next. A stopping member reports so, keeps only its busy partitions
 *   and gets nothing new.
 *
 * The assignment is made only when the membership changes, and kafkajs has no call to rejoin, so
 * a member that wants one has a short-lived member join and leave (kafka-rebalance-nudge.ts):
 * a stopping member when it starts to drain and as each of its jobs ends (its waiting records
 * move at once rather than after the drain), and a member whose slots are all busy while records
 * wait on partitions it could give away (records that arrived after the assignment landed where
 * their partition was), with a doubling back-off so a backlog that fills every member costs a few
 * rebalances, not a stream.
 *
 * So no job restarts when a worker joins or stops, and a newcomer starts waiting work soon after
 * its join (docs/operating.md, "Autoscaling: scaling and stopping workers", has the figures of
 * bench/scale-out.ts). What it cannot do: the records queued behind a running job in the same
 * partition wait for that worker (one partition, one owner); more partitions than slots make
 * that rarer. Members of an older version announce only the round-robin assigner;
 * the group then uses that one (every member announces both) until all run this one.
 */

const { AssignerProtocol } = kafkajs;

export const BUSY_AWARE_ASSIGNER = 'MediaBusyAwareSticky';

/** What a member reports with its join. Partitions are named `topic:partition`. */
export interface MemberLoad {
  /** Records it may run at once. */
  slots: number;
  /** Records it runs now. */
  running: number;
  /** Records it could begin work on at once, if fewer than its free slots (see freeForWork). */
  free?: number;
  /** Partitions with a running record: they stay with this member. */
  busy: string[];
  /** Fetched records not started, by partition. */
  waiting: Record<string, number>;
  /** Draining: it takes no new partition. */
  stopping: boolean;
  /** A member that only joins to make the group rebalance: it takes nothing. */
  nudge: boolean;
}

const NO_LOAD: MemberLoad = {
  slots: 1,
  running: 0,
  busy: [],
  waiting: {},
  stopping: false,
  nudge: false,
};

export interface PlanMember {
  memberId: string;
  topics: readonly string[];
  load: MemberLoad;
}

/** The assignment: member id → topic → partitions. Pure, for the tests and the leader. */
export function planAssignment(
  members: readonly PlanMember[],
  partitions: readonly { topic: string; partition: number }[],
): Map<string, Map<string, number[]>> {
  const byId = [...members].sort((a, b) => a.memberId.localeCompare(b.memberId));
  const plan = new Map(byId.map((m) => [m.memberId, new Map<string, number[]>()]));
  const count = new Map(byId.map((m) => [m.memberId, 0]));
  const give = (m: PlanMember, topic: string, partition: number): void => {
    const topics = plan.get(m.memberId);
    if (!topics) return;
    topics.set(topic, [...(topics.get(topic) ?? []), partition]);
    count.set(m.memberId, (count.get(m.memberId) ?? 0) + 1);
  };
  const takers = (topic: string): PlanMember[] => {
    const subscribed = byId.filter((m) => !m.load.nudge && m.topics.includes(topic));
    const open = subscribed.filter((m) => !m.load.stopping);
    return open.length > 0 ? open : subscribed;
  };
  const spare = new Map(
    byId.map((m) => [
      m.memberId,
      Math.max(0, Math.min(m.load.slots - m.load.running, m.load.free ?? Infinity)),
    ]),
  );
  const waiting: { topic: string; partition: number; records: number }[] = [];
  const idle: { topic: string; partition: number }[] = [];
  for (const p of partitions) {
    const id = `${p.topic}:${p.partition}`;
    const owner = byId.find((m) => !m.load.nudge && m.load.busy.includes(id));
    if (owner && owner.topics.includes(p.topic)) give(owner, p.topic, p.partition);
    else {
      const records = Math.max(0, ...byId.map((m) => m.load.waiting[id] ?? 0));
      if (records > 0) waiting.push({ ...p, records });
      else idle.push(p);
    }
  }
  // Waiting records first, to the free slots: the most waiting first, to the most spare slots.
  // Where no member has a spare slot they stay with the member that holds them: a move would
  // only fetch them (and download their input) again to wait there.
  waiting.sort((a, b) => b.records - a.records);
  for (const p of waiting) {
    const candidates = takers(p.topic);
    const id = `${p.topic}:${p.partition}`;
    const best = pick(candidates, (m) => [
      -Math.max(0, spare.get(m.memberId) ?? 0),
      (m.load.waiting[id] ?? 0) > 0 && !m.load.stopping ? 0 : 1,
      count.get(m.memberId) ?? 0,
    ]);
    if (!best) continue;
    spare.set(best.memberId, (spare.get(best.memberId) ?? 0) - p.records);
    give(best, p.topic, p.partition);
  }
  for (const p of idle) {
    const best = pick(takers(p.topic), (m) => [
      count.get(m.memberId) ?? 0,
      -(spare.get(m.memberId) ?? 0),
    ]);
    if (best) give(best, p.topic, p.partition);
  }
  return plan;
}

/** The member with the smallest key (compared in order); ties keep the member id order. */
function pick(
  members: readonly PlanMember[],
  key: (m: PlanMember) => number[],
): PlanMember | undefined {
  let best: PlanMember | undefined;
  let bestKey: number[] = [];
  for (const m of members) {
    const k = key(m);
    if (!best || less(k, bestKey)) {
      best = m;
      bestKey = k;
    }
  }
  return best;
}

function less(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x < y;
  }
  return false;
}

export function encodeLoad(load: MemberLoad): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...load }), 'utf8');
}

/** A member's report; a member that sent none or an unreadable one counts as idle with one slot. */
export function decodeLoad(userData: Buffer | null | undefined): MemberLoad {
  if (!userData || userData.length === 0) return NO_LOAD;
  try {
    const raw = JSON.parse(userData.toString('utf8')) as Partial<MemberLoad> & { v?: unknown };
    if (raw.v !== 1) return NO_LOAD;
    const num = (x: unknown, min: number): number =>
      typeof x === 'number' && Number.isFinite(x) ? Math.max(min, x) : min;
    const waiting: Record<string, number> = {};
    for (const [id, n] of Object.entries(raw.waiting ?? {})) waiting[id] = num(n, 0);
    return {
      slots: num(raw.slots, 1),
      running: num(raw.running, 0),
      ...(raw.free === undefined ? {} : { free: num(raw.free, 0) }),
      busy: Array.isArray(raw.busy) ? raw.busy.filter((x) => typeof x === 'string') : [],
      waiting,
      stopping: raw.stopping === true,
      nudge: raw.nudge === true,
    };
  } catch {
    return NO_LOAD;
  }
}

/**
 * The kafkajs assigner. `report` is read at every join (kafkajs asks each assigner for its
 * protocol metadata when it sends JoinGroup), so the load is the member's at that moment.
 */
export function busyAwareAssigner(report: () => MemberLoad): PartitionAssigner {
  return ({ cluster }): Assigner => ({
    name: BUSY_AWARE_ASSIGNER,
    version: 1,
    protocol({ topics }) {
      return {
        name: BUSY_AWARE_ASSIGNER,
        metadata: AssignerProtocol.MemberMetadata.encode({
          version: 1,
          topics,
          userData: encodeLoad(report()),
        }),
      };
    },
    async assign({ members, topics }) {
      const plan = planAssignment(
        members.map(readMember),
        topics.flatMap((topic) =>
          cluster
            .findTopicPartitionMetadata(topic)
            .map((m) => ({ topic, partition: m.partitionId })),
        ),
      );
      return [...plan].map(([memberId, assignment]) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 1,
          assignment: Object.fromEntries(assignment),
          userData: Buffer.alloc(0),
        }),
      }));
    },
  });
}

function readMember(member: GroupMember): PlanMember {
  const metadata = AssignerProtocol.MemberMetadata.decode(member.memberMetadata);
  return {
    memberId: member.memberId,
    topics: metadata?.topics ?? [],
    load: decodeLoad(metadata?.userData),
  };
}
