import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { JobRequested, TranscodeSpec } from '../../services/core/contracts/types.generated.ts';
import { MediaError } from '../../services/core/errors.ts';
import type { JobContext } from '../../services/core/worker/job-handler.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createTranscodeHandler } from '../../services/transcoder/handle-transcode.ts';
import { firstPassShare } from '../../services/transcoder/build-transcode-args.ts';
import { createFfmpegRunner } from '../../services/core/media/run-ffmpeg.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { ffprobe, generateClip } from '../support/generate-clip.ts';
import { transcodeRequested } from '../support/job-requests.ts';
import { TEST_WORK_ROOT, testMediaJobDeps } from '../support/media-job-deps.ts';

const run = promisify(execFile);

let files: TestServer;
const handler = createTranscodeHandler(testMediaJobDeps());
const progress: number[] = [];
const ctx: JobContext = {
  signal: new AbortController().signal,
  attempt: 1,
  kind: 'transcode',
  span: (_name, work) => work(),
  log: silentLogger,
  progress: (p) => void progress.push(p),
  openSecret: () => undefined,
  waiting: () => undefined,
  begin: () => Promise.resolve(),
};
const job = (spec: TranscodeSpec, input = 'input.mp4', output = 'out'): JobRequested =>
  transcodeRequested(files, input, output, {
    jobId: '00000000-0000-4000-8000-000000000001',
    transcode: spec,
  });

describe('transcode handler with real ffmpeg', function () {
  this.timeout(120_000);

  before(async () => {
    files = await startTestServer();
    await generateClip(join(files.dir, 'input.mp4'), {
      seconds: 2,
      width: 321,
      height: 241,
      audio: true,
    });
  });
  after(() => files.close());

  const matrix: [TranscodeSpec['encoder'], TranscodeSpec['container'], string, string][] = [
    ['h264', 'mp4', 'h264', 'avc1'],
    ['h265', 'mp4', 'hevc', 'hvc1'],
    ['vp8', 'mp4', 'vp8', 'vp08'],
    ['vp9', 'mp4', 'vp9', 'vp09'],
    ['vp8', 'webm', 'vp8', ''],
    ['vp9', 'webm', 'vp9', ''],
  ];
  for (const [encoder, container, codec, tag] of matrix) {
    it(`${encoder} in ${container}: ffprobe sees ${codec}${tag ? ` (${tag})` : ''}, even size, same duration, audio kept`, async () => {
      const name = `out-${encoder}.${container}`;
      const result = await handler(
        job({ encoder, container, bitrateKbps: '1000' }, 'input.mp4', name),
        ctx,
      );
      const probed = await ffprobe(join(files.dir, name));
      const video = probed.streams.find((s) => s.codec_type === 'video');
      expect(probed.format.format_name).to.contain(container === 'mp4' ? 'mp4' : 'webm');
      expect(video?.codec_name).to.equal(codec);
      if (tag) expect(video?.codec_tag_string).to.equal(tag);
      expect([video?.width, video?.height]).to.deep.equal([320, 240]);
      expect(video?.pix_fmt).to.equal('yuv420p');
      expect(Number(probed.format.duration)).to.be.closeTo(2, 0.15);
      const audio = probed.streams.find((s) => s.codec_type === 'audio');
      expect(audio?.codec_name).to.equal(container === 'mp4' ? 'aac' : 'opus');
      expect(result).to.include({ format: container, videoCodec: codec, width: 320, height: 240 });
      await run('ffmpeg', ['-v', 'error', '-i', join(files.dir, name), '-f', 'null', '-']);
    });
  }

  describesRendersTextWatermarkCharacters();

  describesOverlaysImageWatermarkFetched();

  describesReportsQualityOutputUploads();

  describesFailsInputLargerLimit();
});

function describesRendersTextWatermarkCharacters(): void {
  it('renders a text watermark with characters that break naive escaping, and reports progress', async () => {
    progress.length = 0;
    const text = `100% "it's": done \\ {x} %{pts}`;
    await handler(
      job(
        {
          encoder: 'h264',
          container: 'mp4',
          bitrateKbps: '1000',
          height: 120,
          watermark: { text, fontSize: 18, fontColor: '#ff0000', position: 'topLeft', opacity: 1 },
        },
        'input.mp4',
        'wm.mp4',
      ),
      ctx,
    );
    const video = (await ffprobe(join(files.dir, 'wm.mp4'))).streams.find(
      (s) => s.codec_type === 'video',
    );
    expect([video?.width, video?.height]).to.deep.equal([160, 120]);
    // The top-left corner must now hold red pixels (testsrc2 has none there).
    const { stdout } = await run(
      'ffmpeg',
      [
        '-v',
        'error',
        '-i',
        join(files.dir, 'wm.mp4'),
        '-frames:v',
        '1',
        '-vf',
        'crop=80:30:0:0',
        '-f',
        'rawvideo',
        '-pix_fmt',
        'rgb24',
        '-',
      ],
      { encoding: 'buffer', maxBuffer: 1 << 20 },
    );
    let red = 0;
    for (let i = 0; i + 2 < stdout.length; i += 3)
      if ((stdout[i] ?? 0) > 180 && (stdout[i + 1] ?? 0) < 80 && (stdout[i + 2] ?? 0) < 80) red++;
    expect(red).to.be.greaterThan(20);
    expect(progress.some((p) => p > 5 && p <= 100)).to.equal(true);
  });
}

function describesOverlaysImageWatermarkFetched(): void {
  it('overlays an image watermark fetched by URL', async () => {
    await run('ffmpeg', [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'color=c=blue:s=40x20',
      '-frames:v',
      '1',
      '-y',
      join(files.dir, 'logo.png'),
    ]);
    await handler(
      job(
        {
          encoder: 'h264',
          container: 'mp4',
          bitrateKbps: '1000',
          watermark: {
            imageUrl: `${files.url}/files/logo.png`,
            width: 40,
            height: 20,
            position: 'bottomRight',
          },
        },
        'input.mp4',
        'img.mp4',
      ),
      ctx,
    );
    expect(
      (await ffprobe(join(files.dir, 'img.mp4'))).streams.find((s) => s.codec_type === 'video')
        ?.codec_name,
    ).to.equal('h264');
  });
}

function describesReportsQualityOutputUploads(): void {
  it('reports the quality of the output and uploads the per-frame figures beside it when asked', async () => {
    const name = 'out-quality.mp4';
    const result = await handler(
      job(
        { encoder: 'h264', container: 'mp4', bitrateKbps: '1000', quality: { frames: true } },
        'input.mp4',
        name,
      ),
      ctx,
    );
    const quality = result.quality;
    expect(quality?.framesCompared).to.equal(50);
    expect(quality?.psnr?.mean).to.be.above(25);
    expect(quality?.ssim?.mean).to.be.within(0.8, 1);
    expect(quality?.framesUrl).to.equal(`${files.url}/files/${name}.quality.json`);
    const perFrame = JSON.parse(
      await readFile(join(files.dir, `${name}.quality.json`), 'utf8'),
    ) as {
      frames: { frame: number; psnrY: number; ssimY: number }[];
    };
    expect(perFrame.frames.map((f) => f.frame)).to.deep.equal([...Array(50).keys()]);
    const worst = Math.min(...perFrame.frames.map((f) => f.ssimY));
    expect(quality?.ssim?.min).to.be.closeTo(worst, 1e-5);
  });

  it('an output URL with a query (presigned): the per-frame file at the path plus .quality.json, the query kept', async () => {
    const query =
      'X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20260101%2Fus-east-1%2Fs3' +
      '&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=0f1e2d3c';
    const name = 'out-signed.mp4';
    const result = await handler(
      job(
        { encoder: 'h264', container: 'mp4', bitrateKbps: '1000', quality: { frames: true } },
        'input.mp4',
        `${name}?${query}`,
      ),
      ctx,
    );
    expect(result.quality?.framesUrl).to.equal(`${files.url}/files/${name}.quality.json?${query}`);
    expect(files.puts).to.include.members([
      `/files/${name}?${query}`,
      `/files/${name}.quality.json?${query}`,
    ]);
    const perFrame = JSON.parse(
      await readFile(join(files.dir, `${name}.quality.json`), 'utf8'),
    ) as { frames: unknown[] };
    expect(perFrame.frames).to.have.length(50);
    const video = (await ffprobe(join(files.dir, name))).streams.find(
      (s) => s.codec_type === 'video',
    );
    expect(video?.codec_name, 'the output is still the video').to.equal('h264');
  });

  it('measures nothing when the report is switched off', async () => {
    const result = await handler(
      job(
        { encoder: 'vp9', container: 'webm', bitrateKbps: '1000', quality: { report: false } },
        'input.mp4',
        'out-noquality.webm',
      ),
      ctx,
    );
    expect(result).not.to.have.property('quality');
  });

  it('refuses an HLS playlist dressed as .mp4 without fetching what it names', async () => {
    await writeFile(
      join(files.dir, 'playlist.mp4'),
      `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n${files.url}/files/secret.ts\n#EXT-X-ENDLIST\n`,
    );
    const error = await handler(
      job({ encoder: 'h264', container: 'mp4', bitrateKbps: '1000' }, 'playlist.mp4', 'never.mp4'),
      ctx,
    ).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).code).to.equal('input_unsupported');
  });
}

function describesFailsInputLargerLimit(): void {
  it('fails an input larger than the limit as input_too_large', async () => {
    const small = createTranscodeHandler(
      testMediaJobDeps({ maxInputBytes: 1024, stallTimeoutMs: 1000, threads: 1, fontFile: '' }),
    );
    const error = await small(
      job({ encoder: 'h264', container: 'mp4', bitrateKbps: '1000' }),
      ctx,
    ).catch((e: unknown) => e);
    expect((error as MediaError).code).to.equal('input_too_large');
  });

  it('runs the passes in order, the first into the work dir only, with progress split between them', async () => {
    const real = createFfmpegRunner('ffmpeg', { memoryLimitBytes: 2 * 1024 ** 3 });
    const runs: { args: readonly string[]; ticks: number[] }[] = [];
    const ticks: number[] = [];
    const passes = createTranscodeHandler(
      testMediaJobDeps({
        runFfmpeg: (args, o) => {
          runs.push({ args, ticks: [] });
          return real(args, o);
        },
      }),
    );
    const spec: TranscodeSpec = { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' };
    await passes(job(spec, 'input.mp4', 'passes.mp4'), {
      ...ctx,
      progress: (p) => void (runs.at(-1)?.ticks.push(p), ticks.push(p)),
    });
    const encodes = runs.filter((r) => r.args.includes('-c:v'));
    expect(encodes).to.have.length(2);
    const [first, second] = encodes.map((r) => r.args);
    expect(first?.slice(-3)).to.deep.equal(['-f', 'null', '-']);
    expect(first).to.include('-an');
    const log = first?.[first.indexOf('-passlogfile') + 1] ?? '';
    expect(log.startsWith(TEST_WORK_ROOT)).to.equal(true);
    expect(second?.[second.indexOf('-passlogfile') + 1]).to.equal(log);
    const split = 5 + 90 * firstPassShare('h264');
    expect(encodes.every((r) => r.ticks.length > 0)).to.equal(true);
    expect(Math.max(...(encodes[0]?.ticks ?? []))).to.be.at.most(split + 1e-9);
    expect(Math.min(...(encodes[1]?.ticks ?? [100]))).to.be.at.least(split - 1e-9);
    expect(Math.max(...ticks)).to.be.closeTo(95, 5);
    expect(ticks).to.deep.equal([...ticks].sort((a, b) => a - b));
  });
}
