import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFfmpegRunner } from '../../services/core/media/run-ffmpeg.ts';
import { analyseVideo } from '../../services/summarizer/analyse-video.ts';
import {
  selectSegments,
  summaryTargetSeconds,
  type SummarySegment,
} from '../../services/summarizer/select-segments.ts';
import {
  CLUSTERED_SCENES,
  generateScenes,
  UNEVEN_SCENES,
  type KnownStructure,
  type SceneSpec,
} from '../support/generate-scenes.ts';
import { readTestInput } from '../support/job-input.ts';
import { evenlySpaced, measureQuality, type Quality } from '../support/summary-quality.ts';

const bounds = { memoryLimitBytes: 2 * 1024 ** 3 };
const runFfmpeg = createFfmpegRunner(process.env['TEST_FFMPEG'] ?? 'ffmpeg', bounds);

// Videos of known structure (scenes from different lavfi sources and colourings, still scenes
// with a burst of motion), encoded with B-frames as most inputs are. Ours and evenly spaced clips
// of the same count and total length are measured in the same run.
describe('summary quality on videos of known structure', function () {
  this.timeout(180_000);
  let dir: string;
  const results: { name: string; ours: Quality; even: Quality }[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'summary-quality-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    for (const r of results)
      console.log(
        `      ${r.name}: ours ${JSON.stringify(r.ours)} · even spacing ${JSON.stringify(r.even)}`,
      );
  });

  async function summarise(
    name: string,
    scenes: readonly SceneSpec[],
  ): Promise<{ known: KnownStructure; segments: SummarySegment[]; cutSeconds: number[] }> {
    const path = join(dir, `${name}.mp4`);
    const known = await generateScenes(path, scenes, {
      width: 320,
      height: 180,
      audio: true,
      preset: 'veryfast',
    });
    const input = await readTestInput(path);
    const timeline = await analyseVideo(
      { runFfmpeg, stallTimeoutMs: 30_000 },
      {
        input,
        scratchPath: join(dir, `${name}.pcm`),
        threads: 1,
        signal: new AbortController().signal,
      },
    );
    return {
      known,
      cutSeconds: timeline.cuts.map((c) => c * timeline.sampleSeconds),
      segments: selectSegments(timeline, {
        targetSeconds: summaryTargetSeconds(input.info.durationSeconds),
      }),
    };
  }

  for (const [name, scenes] of [
    ['uneven', UNEVEN_SCENES],
    ['clustered', CLUSTERED_SCENES],
  ] as const)
    it(`${name} scenes: every cut found, none taken from a burst; covers ≥ 0.95 of the scenes, ≥ 0.15 above even spacing, catches the bursts, no clip across a cut`, async () => {
      const { known, segments, cutSeconds } = await summarise(name, scenes);
      // A cut is seen by the first sample at or after it (B-frames skipped: up to 0.2 s later).
      const trueCuts = known.scenes.slice(1).map((scene) => scene.start);
      expect(cutSeconds).to.have.length(trueCuts.length);
      for (const [i, cut] of trueCuts.entries())
        expect(cutSeconds[i], `cut at ${cut}`).to.be.within(cut - 0.25, cut + 0.75);
      const total = segments.reduce((sum, s) => sum + s.durationSeconds, 0);
      const ours = measureQuality(segments, known);
      const even = measureQuality(
        evenlySpaced(known.durationSeconds, segments.length, total),
        known,
      );
      results.push({ name, ours, even });
      expect(total).to.be.at.most(summaryTargetSeconds(known.durationSeconds) + 1e-9);
      expect(ours.sceneCoverage, JSON.stringify(segments)).to.be.at.least(0.95);
      expect(ours.sceneCoverage - even.sceneCoverage).to.be.at.least(0.15);
      expect(ours.burstsCaught).to.equal(1);
      expect(ours.clipsAcrossCuts).to.equal(0);
    });
});
