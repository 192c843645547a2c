import { expect } from 'chai';
import { createFairShare } from '../../../services/core/scheduling/fair-share.ts';

interface Job {
  org: string;
  n: number;
}
const jobs = (org: string, count: number): Job[] =>
  Array.from({ length: count }, (_, n) => ({ org, n }));
const orgOf = (j: Job): string => j.org;

describe('fair shares between organisations', () => {
  it('gives a free slot to the organisation with the fewest running jobs, whatever the backlog', () => {
    const fair = createFairShare();
    const backlog = jobs('a', 10);
    const first = fair.pick(backlog, 2, orgOf);
    expect(first.map((j) => j.org)).to.deep.equal(['a', 'a']);
    fair.finished('a');
    const next = fair.pick([...backlog.slice(2), ...jobs('b', 1)], 1, orgOf);
    expect(next.map((j) => j.org)).to.deep.equal(['b']);
  });

  it('alternates between organisations with one slot (round robin), oldest first within one', () => {
    const fair = createFairShare();
    let waiting = [...jobs('a', 4), ...jobs('b', 4)];
    const order: string[] = [];
    for (let i = 0; i < 8; i += 1) {
      const [job] = fair.pick(waiting, 1, orgOf);
      if (!job) throw new Error('nothing picked');
      order.push(`${job.org}${job.n}`);
      waiting = waiting.filter((j) => j !== job);
      fair.finished(job.org);
    }
    expect(order).to.deep.equal(['a0', 'b0', 'a1', 'b1', 'a2', 'b2', 'a3', 'b3']);
  });

  it('follows the weights: weight 3 gets three starts for one', () => {
    const fair = createFairShare({ weights: new Map([['a', 3]]) });
    let waiting = [...jobs('a', 9), ...jobs('b', 9)];
    const order: string[] = [];
    for (let i = 0; i < 8; i += 1) {
      const [job] = fair.pick(waiting, 1, orgOf);
      if (!job) throw new Error('nothing picked');
      order.push(job.org);
      waiting = waiting.filter((j) => j !== job);
      fair.finished(job.org);
    }
    expect(order.filter((o) => o === 'a')).to.have.length(6);
    expect(order.filter((o) => o === 'b')).to.have.length(2);
  });

  it('an organisation idle for a while banks no credit', () => {
    const fair = createFairShare();
    for (let i = 0; i < 5; i += 1) {
      fair.pick(jobs('a', 1), 1, orgOf);
      fair.finished('a');
    }
    const order: string[] = [];
    let waiting = [...jobs('a', 3), ...jobs('b', 3)];
    for (let i = 0; i < 4; i += 1) {
      const [job] = fair.pick(waiting, 1, orgOf);
      if (!job) throw new Error('nothing picked');
      order.push(job.org);
      waiting = waiting.filter((j) => j !== job);
      fair.finished(job.org);
    }
    expect(order).to.deep.equal(['b', 'a', 'b', 'a']);
  });

  it('caps what one organisation runs at once, leaving a slot free rather than exceeding it', () => {
    const fair = createFairShare({ maxRunningPerTenant: 1 });
    expect(fair.pick(jobs('a', 3), 2, orgOf)).to.have.length(1);
    expect(fair.pick([...jobs('a', 2), ...jobs('b', 1)], 1, orgOf).map(orgOf)).to.deep.equal(['b']);
    expect(Object.fromEntries(fair.running())).to.deep.equal({ a: 1, b: 1 });
  });
});
