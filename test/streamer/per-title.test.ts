import { expect } from 'chai';
import { MediaError } from '../../services/core/errors.ts';
import type { FfmpegRunner } from '../../services/core/media/run-ffmpeg.ts';
import { defaultLadder, type LadderEncoder, type Rung } from '../../services/streamer/ladder.ts';
import { testJobContext } from '../support/job-context.ts';
import { jobInputOf, mediaInfo } from '../support/job-input.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import {
  chooseLadder,
  FLOOR_KBPS,
  FLOOR_SHARE,
  LADDER_GAIN,
  neededKbps,
  peakKbps,
  planPerTitleLadder,
  sampleInputs,
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
  return [800, 3000].map((kbps, k) => point(k === 0 ? 27 : 20, (kbps * at) / 1000, c, alpha));
}

function point(crf: number, kbps: number, c: number, alpha: number): ProbePoint {
  const vmaf = 100 - c * Math.pow(kbps, -alpha);
  return { crf, kbps, averageKbps: kbps, peakKbps: kbps / 2, vmaf };
}

describe('per-title ladder: the probe sample', () => {
  it('reads an input of 6 s or less whole, and a tenth of a longer one in three or more 1 s stretches spread over it', () => {
    expect(sampleStretches(1.5)).to.deep.equal([{ startSeconds: 0, seconds: 1.5 }]);
    expect(sampleStretches(6)).to.deep.equal([{ startSeconds: 0, seconds: 6 }]);
    expect(sampleStretches(10)).to.deep.equal([
      { startSeconds: 1.167, seconds: 1 },
      { startSeconds: 4.5, seconds: 1 },
      { startSeconds: 7.833, seconds: 1 },
    ]);
    const minute = sampleStretches(60);
    expect(minute.map((s) => s.startSeconds)).to.deep.equal([4.5, 14.5, 24.5, 34.5, 44.5, 54.5]);
    expect(minute.every((s) => s.seconds === 1)).to.equal(true);
  });

  it('the rate whose VBV holds the largest frame and the fullest second', () => {
    // 25 frames a second: one 150 kB keyframe, then 2 kB frames.
    const still = [150_000, ...Array.from({ length: 99 }, () => 2_000)];
    expect(peakKbps(still, 25)).to.be.closeTo((150_000 * 8) / 1.2 / 1000, 0.01);
    // Even frames: the second's bits over twice the buffer (buffer plus a second at the peak).
    const even = Array.from({ length: 100 }, () => 10_000);
    expect(peakKbps(even, 25)).to.be.closeTo((250_000 * 8) / 2.4 / 1000, 0.01);
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
    const at = (kbps: number, vmaf: number): ProbePoint => ({
      ...{ crf: 20, kbps, averageKbps: kbps, peakKbps: kbps },
      vmaf,
    });
    const one = neededKbps([at(1000, 100 - (100 - TARGET_VMAF) / 2)], TARGET_VMAF);
    expect(one).to.be.closeTo(1000 * 0.5 * LADDER_GAIN, 0.01);
    expect(neededKbps([at(1000, 100)], TARGET_VMAF)).to.equal(undefined);
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

describe('per-title ladder: the probe run', () => {
  const input = jobInputOf(
    '/in/input',
    mediaInfo({ width: 1280, height: 720 }, { durationSeconds: 60 }),
  );

  it("reads each stretch by seeking into the input, from a trim's start", () => {
    const stretches = sampleStretches(60);
    const inputs = sampleInputs(input, stretches);
    expect(inputs.map((a) => a.slice(a.indexOf('-ss'), a.indexOf('-i')))).to.deep.equal(
      [4.5, 14.5, 24.5, 34.5, 44.5, 54.5].map((at) => ['-ss', String(at), '-t', '1']),
    );
    const trimmed = {
      ...input,
      trim: { startSeconds: 100, durationSeconds: 60, inputSeconds: 600 },
    };
    expect(sampleInputs(trimmed, stretches)[0]).to.include.members(['-ss', '104.5']);
  });

  const probeOf = (encoder: LadderEncoder) => ({
    input,
    encoder,
    workDir: '/nowhere',
    progress: [1, 5] as [number, number],
  });

  it('a probe that fails keeps the fixed table and says so; a stopped job still stops', async () => {
    const failing: FfmpegRunner = () => Promise.reject(new MediaError('internal', 'ffmpeg broke'));
    const deps = testMediaJobDeps({
      runFfmpeg: failing,
      quality: { runFfmpeg: failing, vmaf: { runFfmpeg: failing, subsample: 4 } },
    });
    const o = probeOf('h264');
    const planned = await planPerTitleLadder(deps, testJobContext('stream'), o);
    expect(planned.choice).to.deep.equal({ mode: 'fixed', reason: 'the probe failed' });
    expect(planned.rungs).to.deep.equal(defaultLadder(input.video, 'h264'));
    const stop = new AbortController();
    stop.abort();
    const stopped = await planPerTitleLadder(
      deps,
      { ...testJobContext('stream'), signal: stop.signal },
      o,
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(stopped).to.be.instanceOf(MediaError);
  });

  it('without a VMAF tool keeps the fixed table and says why', async () => {
    const deps = testMediaJobDeps({
      quality: { runFfmpeg: () => Promise.resolve(), vmaf: { missing: 'no libvmaf here' } },
    });
    const planned = await planPerTitleLadder(deps, testJobContext('stream'), probeOf('vp9'));
    expect(planned.choice).to.deep.equal({
      mode: 'fixed',
      reason: 'no VMAF measure: no libvmaf here',
    });
    expect(planned.rungs).to.deep.equal(defaultLadder(input.video, 'vp9'));
  });
});
