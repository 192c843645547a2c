import { expect } from 'chai';
import { createCrowdWatch } from '../../../services/core/bus/kafka-group-load.ts';

describe('crowd watch: when a busy member asks for a rebalance', () => {
  it('after 3 s crowded, then after twice as long each time, reset once nothing waits', () => {
    const crowd = createCrowdWatch({ firstAfterMs: 3000, maxAfterMs: 10_000 });
    const due: number[] = [];
    for (let t = 0; t <= 40_000; t += 1000) if (crowd.check(t, true, true)) due.push(t);
    expect(due).to.deep.equal([3000, 9000, 19_000, 29_000, 39_000]);
    expect(crowd.check(41_000, false, true)).to.equal(false);
    // Still waiting records (not crowded now): the backoff is kept.
    expect(crowd.check(42_000, true, true)).to.equal(false);
    expect(crowd.check(52_000, true, true)).to.equal(true);
    expect(crowd.check(53_000, false, false)).to.equal(false);
    expect(crowd.check(54_000, true, true)).to.equal(false);
    expect(crowd.check(57_000, true, true)).to.equal(true);
  });

  it('never while not crowded', () => {
    const crowd = createCrowdWatch();
    for (let t = 0; t < 60_000; t += 1000) expect(crowd.check(t, false, true)).to.equal(false);
  });
});
