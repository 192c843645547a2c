import { expect } from 'chai';
import {
  decodeLoad,
  encodeLoad,
  planAssignment,
  type MemberLoad,
  type PlanMember,
} from '../../../services/core/bus/kafka-assigner.ts';

const T = 'jobs';
const partitions = (n: number) =>
  Array.from({ length: n }, (_, partition) => ({ topic: T, partition }));
const load = (l: Partial<MemberLoad> = {}): MemberLoad => ({
  slots: 4,
  running: 0,
  busy: [],
  waiting: {},
  stopping: false,
  nudge: false,
  ...l,
});
const member = (memberId: string, l: Partial<MemberLoad> = {}): PlanMember => ({
  memberId,
  topics: [T],
  load: load(l),
});
const owned = (plan: Map<string, Map<string, number[]>>, id: string): number[] =>
  [...(plan.get(id)?.get(T) ?? [])].sort((a, b) => a - b);

describe('busy-aware sticky assignment', () => {
  describesPartitionRunningJobStays();

  describesWaitingRecordsMemberHas();
});

function describesPartitionRunningJobStays(): void {
  it('a partition with a running job stays with the member running it, whoever joins', () => {
    const plan = planAssignment(
      [
        member('b-new'),
        member('a-old', { running: 4, busy: [`${T}:0`, `${T}:1`, `${T}:2`, `${T}:3`] }),
      ],
      partitions(4),
    );
    expect(owned(plan, 'a-old')).to.deep.equal([0, 1, 2, 3]);
    expect(owned(plan, 'b-new')).to.deep.equal([]);
  });

  it('partitions whose records only wait go to the member with free slots (the newcomer)', () => {
    const plan = planAssignment(
      [
        member('a-old', {
          running: 4,
          busy: [`${T}:0`, `${T}:1`],
          waiting: { [`${T}:2`]: 1, [`${T}:3`]: 1 },
        }),
        member('b-new'),
      ],
      partitions(4),
    );
    expect(owned(plan, 'a-old')).to.deep.equal([0, 1]);
    expect(owned(plan, 'b-new')).to.deep.equal([2, 3]);
  });

  it('waiting records are spread by free slots, idle partitions by count', () => {
    const plan = planAssignment(
      [
        member('a', { slots: 2, running: 2, busy: [`${T}:0`], waiting: { [`${T}:1`]: 3 } }),
        member('b', { slots: 2 }),
        member('c', { slots: 2 }),
      ],
      partitions(12),
    );
    expect(owned(plan, 'a')).to.include(0);
    expect(owned(plan, 'a')).to.not.include(1);
    const sizes = ['a', 'b', 'c'].map((m) => owned(plan, m).length);
    expect(sizes.reduce((x, y) => x + y)).to.equal(12);
    expect(Math.max(...sizes) - Math.min(...sizes)).to.be.at.most(1);
  });

  it('waiting records go only where work can begin: free slots capped by `free`', () => {
    // b has free slots but its work slots are taken (free 0): prefetching there would only wait.
    const plan = planAssignment(
      [
        member('a', { running: 4, busy: [`${T}:0`], waiting: { [`${T}:1`]: 1, [`${T}:2`]: 1 } }),
        member('b', { running: 2, free: 0, busy: [`${T}:3`] }),
        member('c', { running: 3, free: 1, busy: [`${T}:4`] }),
      ],
      partitions(5),
    );
    expect(owned(plan, 'c')).to.include.members([4]);
    expect([1, 2].filter((p) => owned(plan, 'c').includes(p))).to.have.length(1);
    expect([1, 2].filter((p) => owned(plan, 'b').includes(p))).to.have.length(0);
  });
}

function describesWaitingRecordsMemberHas(): void {
  it('waiting records that no member has room for stay with the member holding them', () => {
    // Moving 1 to b (fewer partitions) would only fetch it, and download its input, again.
    const plan = planAssignment(
      [
        member('a', { running: 4, busy: [`${T}:0`, `${T}:2`], waiting: { [`${T}:1`]: 1 } }),
        member('b', { running: 2, free: 0, busy: [`${T}:3`] }),
      ],
      partitions(4),
    );
    expect(owned(plan, 'a')).to.deep.equal([0, 1, 2]);
    expect(owned(plan, 'b')).to.deep.equal([3]);
  });

  it('a stopping member keeps only its busy partitions; a nudging member gets nothing', () => {
    const plan = planAssignment(
      [
        member('a', { stopping: true, running: 1, busy: [`${T}:3`], waiting: { [`${T}:1`]: 2 } }),
        member('b'),
        member('n', { nudge: true, slots: 0 }),
      ],
      partitions(6),
    );
    expect(owned(plan, 'a')).to.deep.equal([3]);
    expect(owned(plan, 'b')).to.deep.equal([0, 1, 2, 4, 5]);
    expect(owned(plan, 'n')).to.deep.equal([]);
  });

  it('a lone stopping member still owns every partition (nobody else could)', () => {
    const plan = planAssignment([member('a', { stopping: true })], partitions(3));
    expect(owned(plan, 'a')).to.deep.equal([0, 1, 2]);
  });

  it('the same inputs give the same plan whatever order the members come in', () => {
    const members = [member('a', { busy: [`${T}:5`] }), member('b'), member('c')];
    const one = planAssignment(members, partitions(9));
    const two = planAssignment([...members].reverse(), partitions(9));
    for (const m of ['a', 'b', 'c']) expect(owned(one, m)).to.deep.equal(owned(two, m));
  });

  it('reads back what a member encodes; a member without a report counts as idle', () => {
    const l = load({
      running: 2,
      free: 1,
      busy: [`${T}:1`],
      waiting: { [`${T}:2`]: 3 },
      stopping: true,
    });
    expect(decodeLoad(encodeLoad(l))).to.deep.equal(l);
    expect(decodeLoad(Buffer.alloc(0))).to.deep.include({ slots: 1, running: 0, busy: [] });
    expect(decodeLoad(Buffer.from('not json'))).to.deep.include({ slots: 1, busy: [] });
  });
}
