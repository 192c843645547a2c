import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type {
  JobRequested,
  JobResult,
  SummarySpec,
} from '../../services/core/contracts/types.generated.ts';
import type { JobContext } from '../../services/core/worker/job-handler.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createFfmpegRunner } from '../../services/core/media/run-ffmpeg.ts';
import { createSummaryHandler } from '../../services/summarizer/handle-summary.ts';
import { summaryTargetSeconds } from '../../services/summarizer/select-segments.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { detect, ffprobe, generateClip, generateImage } from '../support/generate-clip.ts';
import { generateScenes, UNEVEN_SCENES } from '../support/generate-scenes.ts';
import { jobRequested } from '../support/job-requests.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';

const run = promisify(execFile);
const ffmpeg = process.env['TEST_FFMPEG'] ?? 'ffmpeg';

/** The loop count of a GIF's NETSCAPE2.0 extension (0 = forever), undefined without one. */
function gifLoopCount(bytes: Buffer): number | undefined {
  const at = bytes.indexOf('NETSCAPE2.0');
  return at < 0 ? undefined : bytes.readUInt16LE(at + 13);
}

/**
 * A summary's report: every frame of the output compared (its length at its frame rate, a frame
 * either way per clip), pictures close to the input's, VMAF when the test has libvmaf.
 */
function expectQuality(
  r: JobResult,
  o: { framesPerSecond: number; psnrAbove: number; vmaf: boolean },
): void {
  const q = r.quality;
  const frames = r.durationSeconds * o.framesPerSecond;
  const clips = r.segments?.length ?? 1;
  expect(q?.framesCompared).to.be.within(frames - clips - 1, frames + clips + 1);
  expect(q?.psnr?.mean).to.be.above(o.psnrAbove);
  expect(q?.ssim?.mean).to.be.within(0.8, 1);
  if (o.vmaf && process.env['TEST_VMAF_FFMPEG']) expect(q?.vmaf?.mean).to.be.within(50, 100);
  else expect(q?.missing.map((m) => m.metric)).to.deep.equal(['vmaf']);
  if (!o.vmaf) expect(q?.missing[0]?.reason).to.match(/palette/);
}

let files: TestServer;
let scenesSeconds = 0;
const handler = createSummaryHandler(testMediaJobDeps());
const ctx: JobContext = {
  signal: new AbortController().signal,
  attempt: 1,
  kind: 'summary',
  span: (_name, work) => work(),
  log: silentLogger,
  progress: () => {},
  openSecret: () => undefined,
  waiting: () => undefined,
  begin: () => Promise.resolve(),
};
const job = (summary: SummarySpec, output: string, input = 'input.mp4'): JobRequested =>
  jobRequested('summary', files, input, output, {
    jobId: '00000000-0000-4000-8000-000000000002',
    summary,
  });
const total = (r: JobResult): number =>
  (r.segments ?? []).reduce((t, s) => t + s.durationSeconds, 0);

describe('summary handler with real ffmpeg', function () {
  this.timeout(180_000);

  before(async () => {
    files = await startTestServer();
    await generateClip(join(files.dir, 'input.mp4'), {
      seconds: 30,
      width: 320,
      height: 240,
      audio: true,
    });
    ({ durationSeconds: scenesSeconds } = await generateScenes(
      join(files.dir, 'scenes.mp4'),
      UNEVEN_SCENES.slice(0, 6),
      { width: 320, height: 180, audio: true, preset: 'veryfast' },
    ));
  });
  after(() => files.close());

  describesMp4H264AacIndex();

  describesMp4RemoveAudioHasAudio();

  describesGifWatermarkColours();

  describesGifWidthImageWatermark();
});

function describesMp4H264AacIndex(): void {
  it('mp4: h264 + aac, index first, segments in order with their scenes and scores, duration within the target', async () => {
    const result = await handler(job({ format: 'mp4' }, 's.mp4', 'scenes.mp4'), ctx);
    const path = join(files.dir, 's.mp4');
    const probed = await ffprobe(path);
    expect(probed.streams.map((s) => s.codec_name).sort()).to.deep.equal(['aac', 'h264']);
    const head = (await readFile(path)).subarray(0, 64 * 1024);
    expect(head.indexOf('moov'))
      .to.be.greaterThan(0)
      .and.below(head.indexOf('mdat') < 0 ? Infinity : head.indexOf('mdat'));
    const segments = result.segments ?? [];
    expect(new Set(segments.map((s) => s.sceneIndex)).size).to.equal(6);
    for (const [i, s] of segments.entries()) {
      expect(s.endSeconds).to.equal(Math.round((s.startSeconds + s.durationSeconds) * 1000) / 1000);
      expect(s.score).to.be.a('number');
      if (i > 0) expect(s.startSeconds).to.be.at.least(segments[i - 1]?.endSeconds ?? 0);
    }
    const duration = Number(probed.format.duration);
    expect(duration).to.be.closeTo(total(result), 0.3);
    // Each clip ends on a whole frame (25 fps here): at most one frame over its segment.
    expect(duration).to.be.at.most(
      summaryTargetSeconds(scenesSeconds) + segments.length * 0.04 + 0.001,
    );
    expect(result.width).to.equal(320);
    expect(result.height).to.equal(180);
    expectQuality(result, { framesPerSecond: 25, psnrAbove: 30, vmaf: true });
  });

  it('mp4 per-frame figures: a file beside the summary, one entry per frame compared', async () => {
    const asked = job({ format: 'mp4', quality: { frames: true } }, 'f.mp4', 'scenes.mp4');
    const result = await handler(asked, ctx);
    expect(result.quality?.framesUrl).to.equal(`${asked.output.url}.quality.json`);
    const file = JSON.parse(await readFile(join(files.dir, 'f.mp4.quality.json'), 'utf8')) as {
      frames: { frame: number; psnrY: number }[];
    };
    expect(file.frames).to.have.length(result.quality?.framesCompared ?? -1);
    const off = await handler(job({ format: 'mp4', quality: { report: false } }, 'o.mp4'), ctx);
    expect(off.quality).to.equal(undefined);
  });

  it('mp4 joins: no frozen and no black frames where clips meet', async () => {
    const result = await handler(job({ format: 'mp4' }, 'joins.mp4'), ctx);
    expect((result.segments ?? []).length).to.be.at.least(2);
    const path = join(files.dir, 'joins.mp4');
    expect(await detect(path, 'freezedetect=n=0.001:d=0.08', 'freeze_start')).to.deep.equal([]);
    expect(await detect(path, 'blackdetect=d=0.04:pix_th=0.1', 'black_start')).to.deep.equal([]);
  });

  it('mp4 is deterministic: the same job gives the same segments and the same bytes', async () => {
    const first = await handler(job({ format: 'mp4', width: 200 }, 'd1.mp4', 'scenes.mp4'), ctx);
    const second = await handler(job({ format: 'mp4', width: 200 }, 'd2.mp4', 'scenes.mp4'), ctx);
    expect(second.segments).to.deep.equal(first.segments);
    expect(
      (await readFile(join(files.dir, 'd2.mp4'))).equals(await readFile(join(files.dir, 'd1.mp4'))),
    ).to.equal(true);
  });
}

function describesMp4RemoveAudioHasAudio(): void {
  it('mp4 with removeAudio has no audio stream; width (odd → even, aspect kept) and a text watermark apply', async () => {
    await handler(
      job(
        {
          format: 'mp4',
          removeAudio: true,
          width: 161,
          watermark: { text: 'demo: 50%', fontSize: 12 },
        },
        'quiet.mp4',
      ),
      ctx,
    );
    const probed = await ffprobe(join(files.dir, 'quiet.mp4'));
    expect(probed.streams.map((s) => s.codec_type)).to.deep.equal(['video']);
    expect([probed.streams[0]?.width, probed.streams[0]?.height]).to.deep.equal([160, 120]);
  });

  it("gif: a GIF that loops forever, the input's width by default (spec §4), its size reported", async () => {
    await generateClip(join(files.dir, 'wide.mp4'), { seconds: 8, width: 640, height: 360 });
    const result = await handler(job({ format: 'gif' }, 'default.gif', 'wide.mp4'), ctx);
    const path = join(files.dir, 'default.gif');
    const probed = await ffprobe(path);
    expect(probed.format.format_name).to.equal('gif');
    expect(probed.streams[0]?.codec_name).to.equal('gif');
    expect([probed.streams[0]?.width, probed.streams[0]?.height]).to.deep.equal([640, 360]);
    expect([result.width, result.height]).to.deep.equal([640, 360]);
    expect(gifLoopCount(await readFile(path))).to.equal(0);
    expect(result.sizeBytes).to.equal((await stat(path)).size);
    expect(Number(probed.format.duration)).to.be.closeTo(total(result), 0.5);
    // At its own 12 frames/s and size; a palette of 256 colours with a dither costs decibels,
    // and VMAF, blind to that loss, is left out.
    expectQuality(result, { framesPerSecond: 12, psnrAbove: 25, vmaf: false });
  });

  it('gif: memory does not grow with its length and width (its palette comes from the samples, not from its frames)', async () => {
    // 15 s at 12 fps of 960×540: 373 MB of frames, which one pass held until the palette was
    // made (it needed over 900 MiB of data segment here; two passes less than 400).
    await generateClip(join(files.dir, 'long.mp4'), { seconds: 60, width: 960, height: 540 });
    const tight = createSummaryHandler(
      testMediaJobDeps({
        runFfmpeg: createFfmpegRunner(ffmpeg, { memoryLimitBytes: 600 * 1024 ** 2 }),
      }),
    );
    const result = await tight(job({ format: 'gif' }, 'long.gif', 'long.mp4'), ctx);
    const probed = await ffprobe(join(files.dir, 'long.gif'));
    expect([probed.streams[0]?.width, probed.streams[0]?.height]).to.deep.equal([960, 540]);
    expect(total(result)).to.be.closeTo(summaryTargetSeconds(60), 1e-9);
    expect(Number(probed.format.duration)).to.be.closeTo(total(result), 0.5);
  });
}

function describesGifWatermarkColours(): void {
  it("gif: the watermark's colours are in the palette (drawn on the samples before palettegen)", async () => {
    // A grey input: without the watermark drawn on its samples the palette would be greys only.
    await run(ffmpeg, [
      ...['-v', 'error', '-f', 'lavfi', '-i', 'color=c=gray:s=320x180:d=8:r=25'],
      ...['-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-y', join(files.dir, 'grey.mp4')],
    ]);
    await generateImage(join(files.dir, 'red.png'), { width: 40, height: 20, color: '0xff0000' });
    await handler(
      job(
        {
          format: 'gif',
          watermark: {
            imageUrl: `${files.url}/files/red.png`,
            width: 40,
            height: 20,
            opacity: 1,
          },
        },
        'red.gif',
        'grey.mp4',
      ),
      ctx,
    );
    const bytes = await readFile(join(files.dir, 'red.gif'));
    // The global colour table follows the 13-byte header when flag 0x80 of byte 10 is set.
    const packed = bytes[10] ?? 0;
    expect(packed & 0x80).to.equal(0x80);
    const colours = 2 ** ((packed & 7) + 1);
    const table = [...Array(colours).keys()].map((i) => [
      ...bytes.subarray(13 + 3 * i, 16 + 3 * i),
    ]);
    // (Not green: palettegen keeps 0x00ff00 for transparency.)
    const reds = table.filter(([r = 0, g = 0, b = 0]) => r > 200 && g < 60 && b < 60);
    expect(reds, JSON.stringify(table)).to.not.be.empty;
  });
}

function describesGifWidthImageWatermark(): void {
  it('gif with a width and an image watermark', async () => {
    await run(ffmpeg, [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'color=c=red:s=20x10',
      '-frames:v',
      '1',
      '-y',
      join(files.dir, 'logo.png'),
    ]);
    const result = await handler(
      job(
        {
          format: 'gif',
          width: 200,
          watermark: {
            imageUrl: `${files.url}/files/logo.png`,
            width: 20,
            height: 10,
            opacity: 0.5,
          },
        },
        's.gif',
      ),
      ctx,
    );
    expect(result.format).to.equal('gif');
    const probed = await ffprobe(join(files.dir, 's.gif'));
    expect(probed.streams[0]?.codec_name).to.equal('gif');
    expect([probed.streams[0]?.width, probed.streams[0]?.height]).to.deep.equal([200, 150]);
    expect(gifLoopCount(await readFile(join(files.dir, 's.gif')))).to.equal(0);
  });
}
