import { expect } from 'chai';
import {
  MAX_TARGET_SECONDS,
  MIN_TARGET_SECONDS,
  selectSegments,
  summaryTargetSeconds,
  type SummarySegment,
  type Timeline,
} from '../../services/summarizer/select-segments.ts';

const DT = 0.5;

/** A timeline of `seconds` with cuts at the given seconds and activity 1 inside the given spans. */
function timeline(
  seconds: number,
  cutsAt: number[],
  busy: [number, number][] = [],
  base = 0.01,
): Timeline {
  const n = Math.floor(seconds / DT) + 1;
  const activity = Array.from({ length: n }, (_, i) =>
    busy.some(([a, b]) => i * DT > a && i * DT <= b) ? 1 : base,
  );
  return {
    durationSeconds: seconds,
    sampleSeconds: DT,
    activity,
    cuts: cutsAt.map((t) => Math.round(t / DT)),
  };
}

function checkRules(segments: readonly SummarySegment[], t: Timeline, target: number): void {
  const cutTimes = t.cuts.map((c) => c * DT);
  let previousEnd = 0;
  for (const s of segments) {
    expect(s.startSeconds, 'temporal order, no overlap').to.be.at.least(previousEnd);
    expect(s.durationSeconds, 'minimum length').to.be.at.least(1);
    expect(s.endSeconds).to.be.closeTo(s.startSeconds + s.durationSeconds, 1e-9);
    expect(s.endSeconds).to.be.at.most(t.durationSeconds);
    // The last sample before a cut may lag by a run of B-frames: a segment ends well before it.
    for (const cut of cutTimes)
      expect(
        cut <= s.startSeconds || cut - DT >= s.endSeconds,
        `segment ${s.startSeconds}-${s.endSeconds} crosses the cut at ${cut}`,
      ).to.equal(true);
    previousEnd = s.endSeconds;
  }
  expect(segments.reduce((sum, s) => sum + s.durationSeconds, 0)).to.be.at.most(target + 1e-9);
}

describe('summary target', () => {
  it('grows with the input and is capped', () => {
    expect(summaryTargetSeconds(4)).to.equal(MIN_TARGET_SECONDS);
    expect(summaryTargetSeconds(60)).to.equal(15);
    expect(summaryTargetSeconds(84)).to.equal(21);
    expect(summaryTargetSeconds(600)).to.equal(MAX_TARGET_SECONDS);
    expect(summaryTargetSeconds(7200)).to.equal(MAX_TARGET_SECONDS);
  });
});

describe('segment selection', () => {
  it('uses an input no longer than the target whole, one segment per scene, back to back', () => {
    const t = timeline(5, [2]);
    const segments = selectSegments(t, { targetSeconds: 6 });
    expect(segments.map((s) => [s.startSeconds, s.endSeconds, s.sceneIndex])).to.deep.equal([
      [0, 2, 0],
      [2, 5, 1],
    ]);
  });

  it('gives every scene a segment, short ones too, and never crosses a cut', () => {
    const cuts = [6, 16, 18, 26, 28, 42, 44, 48, 54, 56, 65, 77, 80];
    const t = timeline(86, cuts);
    const target = summaryTargetSeconds(86);
    const segments = selectSegments(t, { targetSeconds: target });
    checkRules(segments, t, target);
    expect(new Set(segments.map((s) => s.sceneIndex)).size).to.equal(cuts.length + 1);
  });

  it('places each segment on the most active moment of its scene', () => {
    const t = timeline(
      60,
      [20, 40],
      [
        [11, 12.5],
        [47, 48],
      ],
    );
    const segments = selectSegments(t, { targetSeconds: 6 });
    const burst = (a: number, b: number): SummarySegment | undefined =>
      segments.find((s) => s.startSeconds <= a && s.endSeconds >= b);
    expect(burst(11, 12.5), JSON.stringify(segments)).to.not.equal(undefined);
    expect(burst(47, 48), JSON.stringify(segments)).to.not.equal(undefined);
    expect(burst(11, 12.5)?.score).to.be.greaterThan(
      segments.find((s) => s.sceneIndex === 1)?.score ?? 1,
    );
  });

  it('keeps the longest scenes when the target cannot hold one segment per scene, in temporal order', () => {
    const cuts = Array.from({ length: 39 }, (_, i) => (i + 1) * 4).concat([]);
    const t = timeline(160, cuts);
    // 40 scenes of 4 s, the target holds 30 one-second segments (the target is capped at 30 s).
    const segments = selectSegments(t, { targetSeconds: 30 });
    checkRules(segments, t, 30);
    expect(segments).to.have.length(30);
    const long = timeline(160, [10, 12, 14, 100, 101.5]);
    const picked = selectSegments(long, { targetSeconds: 2 }).map((s) => s.sceneIndex);
    expect(picked).to.deep.equal([3, 5]);
  });

  it('spreads segments over one long shot rather than one clip', () => {
    const t = timeline(600, []);
    const segments = selectSegments(t, { targetSeconds: 30 });
    checkRules(segments, t, 30);
    expect(segments.length).to.be.at.least(10);
    expect(segments[0]?.startSeconds).to.be.below(60);
    expect(segments.at(-1)?.endSeconds).to.be.above(540);
  });

  it('treats an input of nothing but flicker as one scene', () => {
    const t = timeline(
      30,
      Array.from({ length: 59 }, (_, i) => (i + 1) * DT),
    );
    const segments = selectSegments(t, { targetSeconds: 7.5 });
    expect(segments.length).to.be.greaterThan(0);
    expect(segments.every((s) => s.durationSeconds >= 1)).to.equal(true);
  });

  it('of windows about as busy, takes the one that starts soonest after a keyframe (cheap to seek to)', () => {
    const t = { ...timeline(60, [20, 40], [], 0.1), keyframes: [0, 10, 20, 33.5, 40, 50] };
    const segments = selectSegments(t, { targetSeconds: 6 });
    expect(segments.map((s) => s.startSeconds)).to.deep.equal([10, 33.5, 50]);
    // A real burst still wins over a cheap seek.
    const burst = { ...timeline(60, [20, 40], [[26, 27]], 0.1), keyframes: [0, 10, 20, 40, 50] };
    const withBurst = selectSegments(burst, { targetSeconds: 6 });
    expect(withBurst[1]?.startSeconds).to.be.at.most(26);
    expect(withBurst[1]?.endSeconds).to.be.at.least(27);
  });

  it('is deterministic: the same timeline gives the same segments', () => {
    const t = timeline(240, [13, 50, 51.5, 120, 200], [[60, 61]]);
    expect(selectSegments(t, { targetSeconds: 30 })).to.deep.equal(
      selectSegments(structuredClone(t), { targetSeconds: 30 }),
    );
  });
});
