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
  describesUsesInputLongerTarget();

  describesTreatsInputNothingBut();
});

function describesUsesInputLongerTarget(): void {
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
}

function describesTreatsInputNothingBut(): void {
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

  it('in a still scene (activity differing by compression noise only), starts at the keyframe inside it', () => {
    // Scene 1 (20–40 s) is still: its activity wobbles by less than STILL_SLACK, far more than a
    // tenth of itself, with its busiest window at 24 s; the keyframe at 33.5 s is free to seek to.
    const t = { ...timeline(60, [20, 40], [], 0.01), keyframes: [0, 10, 20.5, 33.5, 40, 50] };
    const activity = t.activity.map((a, i) => (i * DT > 20 && i * DT < 40 ? 0.0005 : a));
    activity[49] = 0.003;
    activity[50] = 0.003;
    const still = { ...t, activity };
    const segments = selectSegments(still, { targetSeconds: 6 });
    const scene = segments.find((s) => s.sceneIndex === 1);
    expect(scene?.startSeconds, JSON.stringify(segments)).to.equal(33.5);
    // Without keyframes, the busiest window wins, as before.
    const { keyframes: _unused, ...withoutKeyframes } = still;
    const plain = selectSegments(withoutKeyframes, { targetSeconds: 6 });
    const best = plain.find((s) => s.sceneIndex === 1);
    expect(best?.startSeconds).to.be.at.most(24);
    expect(best?.endSeconds).to.be.at.least(25);
  });

  it('keeps the best placement when no keyframe lies inside the scene, or none leaves room for the segment', () => {
    // Scene 1 runs 20–40 s with a burst at 30–31 s; keyframes at 8 s and at 39.5 s (too late to
    // start a segment in the scene). The burst is kept; no window is "close" to it.
    const t = {
      ...timeline(60, [20, 40], [[30, 31]], 0.01),
      keyframes: [0, 8, 39.5, 50],
    };
    const segments = selectSegments(t, { targetSeconds: 6 });
    checkRules(segments, t, 6);
    const scene = segments.find((s) => s.sceneIndex === 1);
    expect(scene?.startSeconds, JSON.stringify(segments)).to.be.at.most(30);
    expect(scene?.endSeconds).to.be.at.least(31);
    // A still scene without a keyframe inside starts as early as it can: nearest the one before.
    const still = { ...timeline(60, [20, 40], [], 0.01), keyframes: [0, 8, 50] };
    const early = selectSegments(still, { targetSeconds: 6 }).find((s) => s.sceneIndex === 1);
    expect(early?.startSeconds).to.equal(20);
  });

  it('is deterministic: the same timeline gives the same segments', () => {
    const t = timeline(240, [13, 50, 51.5, 120, 200], [[60, 61]]);
    expect(selectSegments(t, { targetSeconds: 30 })).to.deep.equal(
      selectSegments(structuredClone(t), { targetSeconds: 30 }),
    );
  });
}
