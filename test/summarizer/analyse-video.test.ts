import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MediaError } from '../../services/core/errors.ts';
import type { JobInput } from '../../services/core/media/read-input.ts';
import { createFfmpegRunner, type FfmpegRunner } from '../../services/core/media/run-ffmpeg.ts';
import { analyseVideo, analysisArgs } from '../../services/summarizer/analyse-video.ts';
import { analysisParts } from '../../services/summarizer/analysis-parts.ts';
import { collectPaletteSamples } from '../../services/summarizer/palette-samples.ts';
import { generateScenes, UNEVEN_SCENES } from '../support/generate-scenes.ts';
import { readTestInput } from '../support/job-input.ts';

const bounds = { memoryLimitBytes: 2 * 1024 ** 3 };
const runFfmpeg = createFfmpegRunner(process.env['TEST_FFMPEG'] ?? 'ffmpeg', bounds);

let dir: string;
let input: JobInput;

describe('video analysis', function () {
  this.timeout(180_000);
  let path: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'analyse-video-'));
    path = join(dir, 'input.mp4');
    // Two passes over the scenes, 172 s: long enough to be analysed in two stretches.
    await generateScenes(path, [...UNEVEN_SCENES, ...UNEVEN_SCENES], {
      width: 160,
      height: 90,
      audio: true,
      preset: 'veryfast',
    });
    input = await readTestInput(path);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  describesLongInputCutStretches();

  describesStretchesAnalysedSideBySide();

  describesFindsCutsBetweenFlat();
});

function describesLongInputCutStretches(): void {
  it('a long input is cut into stretches of whole samples, one per thread (at most 4, at least 60 s each)', () => {
    expect(analysisParts(30, 2)).to.deep.equal([{ startSeconds: 0 }]);
    expect(analysisParts(172.04, 2)).to.deep.equal([
      { startSeconds: 0, seconds: 86.5 },
      { startSeconds: 86.5 },
    ]);
    expect(analysisParts(600, 8)).to.have.length(4);
    const args = analysisArgs({
      inputPath: '/w/input',
      codec: 'h264',
      videoIndex: 0,
      part: { startSeconds: 86.5 },
      keyframesPath: '/w/keys',
      threads: 1,
    });
    expect(args.join(' '))
      .to.contain('-skip_frame bidir')
      .and.contain('-ss 86')
      .and.contain('fps=2:round=up:start_time=0')
      .and.not.contain('-t ');
  });
}

function describesStretchesAnalysedSideBySide(): void {
  it('stretches analysed side by side give the cuts and activity of one pass', async () => {
    const options = {
      input,
      signal: new AbortController().signal,
      paletteSamples: true,
    };
    const one = await analyseVideo(
      { runFfmpeg, stallTimeoutMs: 30_000 },
      { ...options, scratchPath: join(dir, 'a1'), threads: 1 },
    );
    const two = await analyseVideo(
      { runFfmpeg, stallTimeoutMs: 30_000 },
      { ...options, scratchPath: join(dir, 'a2'), threads: 2 },
    );
    expect(two.activity).to.have.length(one.activity.length);
    expect(two.cuts).to.deep.equal(one.cuts);
    expect(one.cuts).to.have.length(2 * UNEVEN_SCENES.length - 1);
    const worst = Math.max(...one.activity.map((a, i) => Math.abs(a - (two.activity[i] ?? 0))));
    expect(worst).to.be.below(0.05);
    // The palette samples of the whole input, from one pass and from two stretches: the same
    // frames on the same grid (one sample off would differ by a scene at every cut).
    const whole = [{ startSeconds: 0, endSeconds: input.info.durationSeconds }];
    const [a, b] = [one, two].map((x) => x.paletteSamples);
    if (!a || !b) throw new Error('no palette samples');
    expect([a.width, a.height, b.paths.length]).to.deep.equal([160, 90, 2]);
    const count = await collectPaletteSamples(a, whole, join(dir, 's1.rgb'));
    expect(await collectPaletteSamples(b, whole, join(dir, 's2.rgb'))).to.equal(count);
    expect(count).to.equal(one.activity.length);
    const [s1, s2] = [await readFile(join(dir, 's1.rgb')), await readFile(join(dir, 's2.rgb'))];
    const frame = 160 * 90 * 3;
    for (let i = 0; i < count; i++) {
      let sum = 0;
      for (let j = i * frame; j < (i + 1) * frame; j++)
        sum += Math.abs((s1[j] ?? 0) - (s2[j] ?? 0));
      expect(sum / frame, `sample ${i}`).to.be.below(1);
    }
  });
}

function describesFindsCutsBetweenFlat(): void {
  it('finds cuts between flat pictures that x264 codes in a few bytes, with no keyframe at them', async () => {
    // x264 codes a cut to a flat picture as weighted prediction (the previous picture with a
    // brightness and colour offset): no keyframe, and packets as small as a still frame's. So no
    // rule on packet sizes could tell these GOPs from still ones; the analysis decodes them
    // (README, "Skipping still GOPs in the analysis").
    const flat = join(dir, 'flat.mp4');
    await generateScenes(
      flat,
      ['color=c=navy', 'color=c=darkgreen', 'color=c=gray'].map((source) => ({
        source,
        seconds: 3,
      })),
      { width: 160, height: 90, preset: 'veryfast' },
    );
    const { stdout } = await promisify(execFile)(process.env['TEST_FFPROBE'] ?? 'ffprobe', [
      ...['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'packet=size,flags'],
      ...['-of', 'csv=p=0', flat],
    ]);
    const packets = stdout
      .trim()
      .split('\n')
      .map((line) => ({ size: Number(line.split(',')[0]), key: line.includes('K') }));
    expect(packets.filter((p) => p.key)).to.have.length(1);
    expect(Math.max(...packets.filter((p) => !p.key).map((p) => p.size))).to.be.below(100);
    const timeline = await analyseVideo(
      { runFfmpeg, stallTimeoutMs: 30_000 },
      {
        input: await readTestInput(flat),
        scratchPath: join(dir, 'flat'),
        threads: 1,
        signal: new AbortController().signal,
      },
    );
    const cutSeconds = timeline.cuts.map((c) => c * timeline.sampleSeconds);
    expect(cutSeconds).to.have.length(2);
    for (const [i, cut] of [3, 6].entries())
      expect(cutSeconds[i], `cut at ${cut}`).to.be.within(cut - 0.25, cut + 0.75);
  });

  it('a failing stretch stops its sibling and fails the analysis with its own error', async () => {
    let calls = 0;
    const failing: FfmpegRunner = (args, o) => {
      if (calls++ === 0)
        return Promise.reject(
          new MediaError('transcode_failed', 'ffmpeg could not process this input'),
        );
      return runFfmpeg(args, o);
    };
    const error = await analyseVideo(
      { runFfmpeg: failing, stallTimeoutMs: 30_000 },
      {
        input,
        scratchPath: join(dir, 'a3'),
        threads: 2,
        signal: new AbortController().signal,
      },
    ).catch((e: unknown) => e);
    expect((error as MediaError).code).to.equal('transcode_failed');
  });
}
