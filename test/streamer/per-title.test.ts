import { expect } from 'chai';
import type { Rung } from '../../services/streamer/ladder.ts';
import {
  chooseLadder,
  FLOOR_KBPS,
  FLOOR_SHARE,
  LADDER_GAIN,
  neededKbps,
  sampleStretches,
  STEP_RATIO,
  TARGET_VMAF,
  type ProbePoint,
} from '../../services/streamer/per-title.ts';

const rung = (name: string, width: number, height: number, kbps: number): Rung => ({
  name,
  width,
  height,
  bitrateKbps: kbps,
  maxrateKbps: Math.round(kbps * 1.2),
  bufsizeKbps: Math.round(kbps * 1.2),
});
const table = [
  rung('720p', 1280, 720, 2800),
  rung('480p', 852, 480, 1400),
  rung('360p', 640, 360, 800),
  rung('240p', 426, 240, 400),
];

/** Two probe points on the curve 100 − VMAF = c · rate^(−α), which reaches `target` at `at` kb/s. */
function pointsOn(at: number, alpha: number, target = TARGET_VMAF): ProbePoint[] {
  const c = (100 - target) * Math.pow(at, alpha);
  return [800, 3000].map((kbps, k) => ({
    crf: k === 0 ? 27 : 20,
    kbps: (kbps * at) / 1000,
    vmaf: 100 - c * Math.pow((kbps * at) / 1000, -alpha),
  }));
}

describe('per-title ladder: the probe sample', () => {
  it('reads a short input whole, and a tenth of a longer one in 2 s stretches spread over it', () => {
    expect(sampleStretches(1.5)).to.deep.equal([{ startSeconds: 0, seconds: 1.5 }]);
    expect(sampleStretches(5)).to.deep.equal([{ startSeconds: 1.5, seconds: 2 }]);
    const minute = sampleStretches(60);
    expect(minute.map((s) => s.startSeconds)).to.deep.equal([9, 29, 49]);
    expect(minute.every((s) => s.seconds === 2)).to.equal(true);
  });

  it('never reads more than 30 s, and every stretch lies inside the input', () => {
    const hours = sampleStretches(7200);
    expect(hours.reduce((n, s) => n + s.seconds, 0)).to.equal(30);
    for (const s of hours) expect(s.startSeconds + s.seconds).to.be.at.most(7200);
    for (const d of [2.5, 7, 33, 600])
      for (const s of sampleStretches(d)) {
        expect(s.startSeconds).to.be.at.least(0);
        expect(s.startSeconds + s.seconds).to.be.at.most(d);
      }
  });
});

describe('per-title ladder: the rate a rung needs', () => {
  it('reads the target off the fitted curve, whatever its slope, scaled to the ladder encoder', () => {
    for (const alpha of [0.8, 1, 2.1]) {
      const needed = neededKbps(pointsOn(1500, alpha), TARGET_VMAF);
      expect(needed).to.be.closeTo(1500 * LADDER_GAIN, 1);
    }
  });

  it('with one usable point assumes the gentlest slope (more bits), and none gives no rate', () => {
    const one = neededKbps([{ crf: 20, kbps: 1000, vmaf: 97 }], TARGET_VMAF);
    expect(one).to.be.closeTo(1000 * 0.5 * LADDER_GAIN, 0.01);
    expect(neededKbps([{ crf: 20, kbps: 1000, vmaf: 100 }], TARGET_VMAF)).to.equal(undefined);
    expect(neededKbps([], TARGET_VMAF)).to.equal(undefined);
  });
});

describe('per-title ladder: the rates chosen', () => {
  const sample = [{ startSeconds: 1.5, seconds: 2 }];

  it('each rung at the rate it needs, between the floor and the fixed rate, its VBV scaled', () => {
    const needs = [1400, 700, 60, 9000].map((n) => n / LADDER_GAIN);
    const chosen = chooseLadder(
      table.map((r, k) => ({ rung: r, points: pointsOn(needs[k] ?? 0, 1.2) })),
      'h264',
      sample,
    );
    // 720p 1400; 480p 700; 360p raised to its floor; 240p capped at 400, more than the 360p
    // rung kept above it: dropped.
    const rates = chosen.choice.rungs?.map((r) => [r.name, r.chosenKbps, r.kept]);
    expect(rates).to.deep.equal([
      ['720p', 1400, true],
      ['480p', 700, true],
      ['360p', Math.max(FLOOR_KBPS, 800 * FLOOR_SHARE), true],
      ['240p', 400, false],
    ]);
    expect(chosen.rungs.map((r) => [r.name, r.bitrateKbps, r.maxrateKbps])).to.deep.equal([
      ['720p', 1400, 1680],
      ['480p', 700, 840],
      ['360p', 120, 144],
    ]);
    expect(chosen.choice.rungs?.[3]?.reason).to.match(/^dropped/);
    expect(chosen.choice.rungs?.[2]?.reason).to.match(/floor/);
    expect(chosen.choice.complexity).to.be.closeTo((1400 * 1000) / (1280 * 720), 0.01);
  });

  it('drops a rung within the step ratio of the rung kept above, never the top one', () => {
    const chosen = chooseLadder(
      table.map((r, k) => ({ rung: r, points: pointsOn([500, 450, 300, 150][k] ?? 0, 1) })),
      'h264',
      sample,
    );
    expect(chosen.rungs.map((r) => r.name)).to.deep.equal(['720p', '360p', '240p']);
    for (const [k, r] of chosen.rungs.entries()) {
      const below = chosen.rungs[k + 1];
      if (below) expect(r.bitrateKbps).to.be.at.least(below.bitrateKbps * STEP_RATIO);
    }
  });

  it('H.265 and VP9 rungs need the table encoder factor of the H.264 rate the probe found', () => {
    const vp9Table = table.map((r) => rung(r.name, r.width, r.height, r.bitrateKbps * 0.7));
    const chosen = chooseLadder(
      vp9Table.map((r) => ({ rung: r, points: pointsOn(1000 / LADDER_GAIN, 1) })),
      'vp9',
      sample,
    );
    expect(chosen.choice.rungs?.[0]).to.include({ neededKbps: 700, chosenKbps: 700 });
  });

  it('a rung whose probe cannot be fitted keeps the fixed rate', () => {
    const chosen = chooseLadder([{ rung: table[0] as Rung, points: [] }], 'h264', sample);
    expect(chosen.rungs[0]?.bitrateKbps).to.equal(2800);
    expect(chosen.choice.rungs?.[0]?.reason).to.match(/could not be fitted/);
  });
});
