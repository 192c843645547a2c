import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createFfmpegRunner } from '../../services/core/media/run-ffmpeg.ts';
import {
  buildSummaryArgs,
  renderParts,
  type SummaryRender,
} from '../../services/summarizer/build-summary-args.ts';
import { gifLayout, joinGifs } from '../../services/summarizer/join-gifs.ts';
import { detect, ffprobe } from '../support/generate-clip.ts';
import { audioInfo, videoInfo } from '../support/job-input.ts';
import { generateScenes, UNEVEN_SCENES } from '../support/generate-scenes.ts';

const run = promisify(execFile);
const ffmpeg = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
const runFfmpeg = createFfmpegRunner(ffmpeg, { memoryLimitBytes: 2 * 1024 ** 3 });

/** Runs a plan as the handler does: its files, its steps (runs side by side), its GIF join. */
async function render(o: SummaryRender): Promise<void> {
  const plan = buildSummaryArgs(o);
  for (const f of plan.files) await writeFile(f.path, f.content);
  for (const runs of plan.steps)
    await Promise.all(
      runs.map((args) =>
        runFfmpeg(args, { signal: new AbortController().signal, stallTimeoutMs: 60_000 }),
      ),
    );
  if (plan.gifParts) await joinGifs(plan.gifParts, o.outputPath);
}

/** Per-frame checksums of the decoded video (and the number of audio samples) of a file. */
async function frames(path: string): Promise<string[]> {
  const { stdout } = await run(ffmpeg, ['-v', 'error', '-i', path, '-an', '-f', 'framemd5', '-']);
  return stdout
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.split(',').slice(2).join(','));
}

// Whole seconds from whole seconds: every clip is a whole number of frames at 25 fps, so a part
// starts where its clips start in one render and the GIF's 12 fps pick the same frames (with
// clips of other lengths a part's frames may be picked a frame apart from one render's).
/** Codec, frame count and duration of each stream. */
async function streams(
  path: string,
): Promise<{ codec_name: string; nb_frames: string; duration: string }[]> {
  const { stdout } = await run(process.env['TEST_FFPROBE'] ?? 'ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'stream=codec_name,nb_frames,duration',
    '-of',
    'json',
    path,
  ]);
  return (
    JSON.parse(stdout) as { streams: { codec_name: string; nb_frames: string; duration: string }[] }
  ).streams;
}

/** ffmpeg's log of a two-input filter graph run over two files (e.g. psnr, ssim). */
async function detectBetween(a: string, b: string, graph: string): Promise<string> {
  const { stderr } = await run(ffmpeg, [
    ...['-hide_banner', '-nostats', '-i', a, '-i', b, '-lavfi', graph, '-f', 'null', '-'],
  ]);
  return stderr;
}

/** Where freezedetect finds the picture still, from its log. */
async function freezes(path: string): Promise<string[]> {
  const lines = await detect(path, 'freezedetect=n=0.001:d=0.08', 'freeze_');
  return lines.map((l) => l.slice(l.indexOf(']') + 2));
}

const clips = [
  { startSeconds: 1, durationSeconds: 1 },
  { startSeconds: 7, durationSeconds: 2 },
  { startSeconds: 16, durationSeconds: 1 },
  { startSeconds: 22, durationSeconds: 2 },
  { startSeconds: 30, durationSeconds: 2 },
];

let dir: string;
let input: string;
const base = (o: Partial<SummaryRender>): SummaryRender => ({
  spec: { format: 'mp4' },
  inputPath: input,
  outputPath: join(dir, 'out'),
  palettePath: join(dir, 'palette.png'),
  clips,
  size: { width: 320, height: 180 },
  picture: { video: videoInfo({ width: 320, height: 180 }) },
  audio: audioInfo(),
  describedByHeader: true,
  threads: 2,
  ...o,
});

describe('summary render in parts side by side', function () {
  this.timeout(180_000);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'render-parts-'));
    input = join(dir, 'scenes.mp4');
    await generateScenes(input, UNEVEN_SCENES.slice(0, 6), {
      width: 320,
      height: 180,
      audio: true,
      preset: 'veryfast',
    });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  describesCutsClipsRunConsecutive();

  describesMp4AudioPartsJoin();

  describesGifPaletteSamplesKeeps();

  describesGifJoinRefusesParts();
});

function describesCutsClipsRunConsecutive(): void {
  it('cuts the clips into one run of consecutive clips per thread, of about the same length', () => {
    const parts = renderParts(base({ partsDir: dir }));
    expect(parts.map((p) => p.clips)).to.deep.equal([clips.slice(0, 3), clips.slice(3)]);
    expect(parts.map((p) => p.threads)).to.deep.equal([1, 1]);
    const four = renderParts(base({ partsDir: dir, threads: 8 }));
    expect(four).to.have.length(4);
    expect(four.flatMap((p) => p.clips)).to.deep.equal(clips);
    expect(four.every((p) => p.clips.length > 0 && p.threads === 2)).to.equal(true);
    // As many parts as clips at most; none without a parts directory or with one thread.
    expect(
      renderParts(base({ partsDir: dir, threads: 4, clips: clips.slice(0, 2) })),
    ).to.have.length(2);
    expect(renderParts(base({ threads: 4 }))).to.have.length(1);
    expect(renderParts(base({ partsDir: dir, threads: 1 }))).to.have.length(1);
    // A long clip first: the short ones after it still fill the later parts.
    const long = [{ startSeconds: 0, durationSeconds: 20 }, ...clips.slice(1)];
    const uneven = renderParts(base({ partsDir: dir, threads: 3, clips: long }));
    expect(uneven.map((p) => p.clips.length)).to.deep.equal([1, 1, 3]);
  });

  it('mp4: parts in MOV with PCM audio, joined by the concat demuxer with the video copied and AAC once', async () => {
    const o = base({ partsDir: dir, outputPath: join(dir, 'parts.mp4') });
    const plan = buildSummaryArgs(o);
    expect(plan.steps.map((s) => s.length)).to.deep.equal([2, 1]);
    for (const part of plan.steps[0] ?? []) {
      expect(part.slice(part.indexOf('-c:a'), part.indexOf('-c:a') + 2)).to.deep.equal([
        '-c:a',
        'pcm_s16le',
      ]);
      expect(part.slice(-4, -2)).to.deep.equal(['-f', 'mov']);
    }
    const join_ = plan.steps[1]?.[0] ?? [];
    expect(join_.slice(join_.indexOf('-f'), join_.indexOf('-f') + 2)).to.deep.equal([
      '-f',
      'concat',
    ]);
    expect(join_[join_.indexOf('-c:v') + 1]).to.equal('copy');
    expect(join_[join_.indexOf('-c:a') + 1]).to.equal('aac');
    expect(plan.files.map((f) => f.content)).to.deep.equal([
      "file 'part0.mov'\nfile 'part1.mov'\n",
    ]);

    await render(o);
    await render(base({ outputPath: join(dir, 'whole.mp4') }));
    const parts = await streams(join(dir, 'parts.mp4'));
    const whole = await streams(join(dir, 'whole.mp4'));
    expect(parts.map((s) => s.codec_name)).to.deep.equal(['h264', 'aac']);
    // The same frames shown (8 s at 25 fps), and the audio as long as the video.
    expect(parts[0]?.nb_frames).to.equal('200');
    expect(whole[0]?.nb_frames).to.equal('200');
    for (const p of [parts, whole])
      expect(Number(p[1]?.duration)).to.be.closeTo(Number(p[0]?.duration), 0.05);
    // No frozen frame where the parts meet: the still stretches are those of one render.
    expect(await freezes(join(dir, 'parts.mp4'))).to.deep.equal(
      await freezes(join(dir, 'whole.mp4')),
    );
    // Index at the front.
    const head = (await readFile(join(dir, 'parts.mp4'))).subarray(0, 64 * 1024).toString('latin1');
    expect(head.indexOf('moov')).to.be.within(0, head.indexOf('mdat'));
  });
}

function describesMp4AudioPartsJoin(): void {
  it('mp4 without audio: parts and join have no audio stream', async () => {
    const o = base({
      partsDir: dir,
      outputPath: join(dir, 'quiet.mp4'),
      spec: { format: 'mp4', removeAudio: true },
    });
    await render(o);
    const probed = await ffprobe(join(dir, 'quiet.mp4'));
    expect(probed.streams.map((s) => s.codec_type)).to.deep.equal(['video']);
  });

  it('gif: parts with the one palette, joined frame by frame, show exactly the frames of one render', async () => {
    const size = { width: 1280, height: 720 };
    const partsDir = join(dir, 'gif-parts');
    await mkdir(partsDir);
    // Palette samples as the analysis keeps them (2 per second, 160×90 rgb24), here of the whole input.
    const samples = join(dir, 'samples.rgb');
    await run(ffmpeg, [
      ...['-v', 'error', '-i', input, '-vf', 'fps=2,scale=160:90:flags=neighbor'],
      ...['-f', 'rawvideo', '-pix_fmt', 'rgb24', '-y', samples],
    ]);
    const gif = (o: Partial<SummaryRender>): SummaryRender =>
      base({
        spec: { format: 'gif' },
        size,
        paletteSamples: { path: samples, width: 160, height: 90 },
        ...o,
      });
    const o = gif({ partsDir, outputPath: join(dir, 'parts.gif') });
    const plan = buildSummaryArgs(o);
    expect(plan.steps.map((s) => s.length)).to.deep.equal([1, 2]);
    expect(plan.gifParts).to.deep.equal([join(partsDir, 'part0.gif'), join(partsDir, 'part1.gif')]);
    await render(o);
    await render(gif({ outputPath: join(dir, 'whole.gif') }));
    const joined = await frames(join(dir, 'parts.gif'));
    expect(joined).to.have.length(8 * 12);
    expect(joined).to.deep.equal(await frames(join(dir, 'whole.gif')));
    const bytes = await readFile(join(dir, 'parts.gif'));
    // One loop extension (forever), one trailer at the end.
    expect(bytes.toString('latin1').split('NETSCAPE2.0')).to.have.length(2);
    expect(bytes.readUInt16LE(bytes.indexOf('NETSCAPE2.0') + 13)).to.equal(0);
    expect(gifLayout(bytes).trailer).to.equal(bytes.length - 1);
  });
}

function describesGifPaletteSamplesKeeps(): void {
  it('gif: the palette from samples keeps the GIF close to its source; one from unfitting samples does not', async () => {
    const size = { width: 320, height: 180 };
    const samples = join(dir, 'samples-320.rgb');
    await run(ffmpeg, [
      ...['-v', 'error', '-i', input, '-vf', 'fps=2,scale=160:90:flags=neighbor'],
      ...['-f', 'rawvideo', '-pix_fmt', 'rgb24', '-y', samples],
    ]);
    // Unfitting: one grey frame of the same size.
    const grey = join(dir, 'grey.rgb');
    await writeFile(grey, Buffer.alloc(160 * 90 * 3, 128));
    const gifOf = async (path: string, name: string): Promise<string> => {
      const outputPath = join(dir, name);
      await render(
        base({
          spec: { format: 'gif' },
          size,
          paletteSamples: { path, width: 160, height: 90 },
          palettePath: join(dir, `${name}.png`),
          outputPath,
        }),
      );
      return outputPath;
    };
    // The same frames without a palette: the clips at 12 fps, scaled alike, kept lossless.
    const reference = join(dir, 'reference.mkv');
    await run(ffmpeg, [
      '-v',
      'error',
      ...clips.flatMap((c) => [
        ...['-ss', String(c.startSeconds), '-t', String(c.durationSeconds), '-i', input],
      ]),
      '-filter_complex',
      `${clips.map((_, i) => `[${i}:v]setpts=PTS-STARTPTS[c${i}];`).join('')}${clips.map((_, i) => `[c${i}]`).join('')}concat=n=${clips.length}:v=1:a=0,fps=12,scale=320:180:flags=lanczos,format=rgb24[v]`,
      ...['-map', '[v]', '-c:v', 'ffv1', '-y', reference],
    ]);
    const psnr = async (gif: string): Promise<number> => {
      const frame = 'settb=1/12,setpts=N,format=rgb24';
      const lines = await detectBetween(
        gif,
        reference,
        `[0:v]${frame}[a];[1:v]${frame}[b];[a][b]psnr`,
      );
      return Number(/average:([\d.]+)/.exec(lines)?.[1]);
    };
    const fitting = await psnr(await gifOf(samples, 'fitting.gif'));
    const unfitting = await psnr(await gifOf(grey, 'unfitting.gif'));
    // 35.5 dB against 8.0 when measured.
    expect(fitting).to.be.above(30);
    expect(unfitting).to.be.below(fitting - 10);
  });
}

function describesGifJoinRefusesParts(): void {
  it('gif join refuses parts whose palettes differ', async () => {
    const a = join(dir, 'a.gif');
    const b = join(dir, 'b.gif');
    for (const [path, colour] of [
      [a, 'red'],
      [b, 'blue'],
    ] as const)
      await run(ffmpeg, [
        '-v',
        'error',
        '-f',
        'lavfi',
        '-i',
        `color=c=${colour}:s=16x16:d=0.2,split[x][y];[x]palettegen[p];[y][p]paletteuse`,
        '-f',
        'gif',
        '-y',
        path,
      ]);
    await joinGifs([a, a], join(dir, 'aa.gif'));
    expect(await frames(join(dir, 'aa.gif'))).to.have.length(2 * (await frames(a)).length);
    let error: unknown;
    await joinGifs([a, b], join(dir, 'ab.gif')).catch((e: unknown) => (error = e));
    expect(String(error)).to.match(/differ in size or palette/);
  });
}
