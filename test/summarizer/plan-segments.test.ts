import { expect } from 'chai';
import { MAX_SUMMARY_SECONDS, planSegments } from '../../services/summarizer/plan-segments.ts';

describe('summary segments', () => {
  it('uses a short input whole', () => {
    expect(planSegments(4.2)).to.deep.equal([{ startSeconds: 0, durationSeconds: 4.2 }]);
  });
  it('spreads clips in temporal order, inside the input, within the length bound, deterministically', () => {
    for (const duration of [7, 24, 60, 600, 7200]) {
      const segments = planSegments(duration);
      expect(planSegments(duration)).to.deep.equal(segments);
      let previousEnd = 0;
      for (const s of segments) {
        expect(s.startSeconds).to.be.at.least(previousEnd);
        previousEnd = s.startSeconds + s.durationSeconds;
      }
      expect(previousEnd).to.be.at.most(duration);
      expect(segments.reduce((t, s) => t + s.durationSeconds, 0)).to.be.at.most(MAX_SUMMARY_SECONDS);
    }
  });
});
