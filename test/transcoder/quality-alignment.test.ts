// The quality report compares each output frame with its own reference frame whatever the
// container does to times (issue 41): WebM keeps whole milliseconds and its video may start a
// few milliseconds in behind an Opus pre-roll, an MP4 may carry an edit list, a trim starts the
// reference mid-file. Each case goes through the transcode handler with its report on, and the
// report's mean, 5th percentile and minimum are held to a measure made apart from the service:
// the output and the service's own reference (made by the encode's ffmpeg into a Y4M file)
// decoded to frames and paired by decode order, the n-th with the n-th. Before the report put
// both sides on the frame grid, a VP9/WebM at 30 fps with Opus reported a VMAF minimum of 0 and
// a PSNR minimum of 8 dB where this measure found neither.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type {
  QualityReport,
  TranscodeSpec,
} from '../../services/core/contracts/types.generated.ts';
import { inputReference } from '../../services/core/media/quality-args.ts';
import { trimmedInput } from '../../services/core/media/trim.ts';
import { createTranscodeHandler } from '../../services/transcoder/handle-transcode.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { transcodeRequested } from '../support/job-requests.ts';
import { testJobContext } from '../support/job-context.ts';
import { readTestInput } from '../support/job-input.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';

const run = promisify(execFile);
const FFMPEG = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
const VMAF_FFMPEG = process.env['TEST_VMAF_FFMPEG'];
const TAGS = 'setparams=range=tv:color_primaries=bt709:color_trc=bt709:colorspace=bt709';
/** The test deps' VMAF subsample (support/media-job-deps.ts). */
const SUBSAMPLE = 4;

interface AlignmentCase {
  name: string;
  rate: string;
  spec: TranscodeSpec;
  /** Makes the input from the generated clip at `clip` (default: the clip itself). */
  input?: (clip: string, out: string) => Promise<void>;
  trim?: { startSeconds: number; durationSeconds: number };
}

const webm = (encoder: 'vp8' | 'vp9'): TranscodeSpec => ({
  encoder,
  container: 'webm',
  bitrateKbps: '1000',
});

const CASES: AlignmentCase[] = [
  { name: 'VP9/WebM, 30 fps, Opus', rate: '30', spec: webm('vp9') },
  { name: 'VP9/WebM, 29.97 fps, Opus', rate: '30000/1001', spec: webm('vp9') },
  { name: 'VP8/WebM, 30 fps, Opus', rate: '30', spec: webm('vp8') },
  { name: 'VP8/WebM, 29.97 fps, Opus', rate: '30000/1001', spec: webm('vp8') },
  {
    name: 'H.265/MP4, 29.97 fps',
    rate: '30000/1001',
    spec: { encoder: 'h265', container: 'mp4', bitrateKbps: '1000' },
  },
  {
    // Cut with stream copy 0.5 s in, between keyframes: the MP4 keeps the frames from the
    // keyframe before and an edit list that starts the picture at the cut.
    name: 'H.264/MP4 from an MP4 with an edit list',
    rate: '30',
    spec: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
    input: (clip, out) =>
      ff('-ss', '0.5', '-i', clip, '-c', 'copy', '-movflags', '+faststart', out),
  },
  {
    name: 'VP9/WebM of a trimmed 29.97 fps input',
    rate: '30000/1001',
    spec: webm('vp9'),
    trim: { startSeconds: 0.4, durationSeconds: 1.2 },
  },
];

async function ff(...args: string[]): Promise<void> {
  await run(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y', ...args]);
}

/** 2.5 s of moving, noisy pictures (a frame compared with its neighbour scores far lower), a tone. */
async function clip(rate: string, out: string): Promise<void> {
  await ff(
    ...['-f', 'lavfi', '-i', `testsrc2=s=320x180:r=${rate}:d=2.5,noise=alls=6:allf=t`],
    ...['-f', 'lavfi', '-i', 'sine=f=440:d=2.5'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '12', '-g', '15', '-pix_fmt', 'yuv420p'],
    ...['-c:a', 'aac', out],
  );
}

/** The service's reference of the job's input, trimmed as the job was, as Y4M frames. */
async function serviceReference(input: string, c: AlignmentCase, out: string): Promise<void> {
  const ref = inputReference(trimmedInput(await readTestInput(input), c.trim), {
    width: 320,
    height: 180,
  });
  const graph = `${ref.chain(0)},format=yuv420p[v]`;
  await ff(...ref.inputs.flat(), '-filter_complex', graph, '-map', '[v]', out);
}

interface Measured {
  frames: number;
  psnr: { mean: number; min: number };
  vmaf?: { mean: number; p5: number; min: number };
}

/** Output against reference, the n-th frame with the n-th (times replaced by frame numbers). */
async function byDecodeOrder(output: string, reference: string, dir: string): Promise<Measured> {
  const side = `format=yuv420p,${TAGS},setpts=N/(25*TB)`;
  const psnrLog = join(dir, 'psnr.log');
  const vmafLog = join(dir, 'vmaf.json');
  const vmaf = `libvmaf=model=version=vmaf_v0.6.1:n_subsample=${SUBSAMPLE}:log_fmt=json:log_path=${vmafLog}`;
  const graph = VMAF_FFMPEG
    ? `[0:v]${side}[d];[1:v]${side},split[r1][r2];[d][r1]psnr=stats_file=${psnrLog}[d1];[d1][r2]${vmaf}`
    : `[0:v]${side}[d];[1:v]${side}[r];[d][r]psnr=stats_file=${psnrLog}`;
  await run(VMAF_FFMPEG ?? FFMPEG, [
    ...['-hide_banner', '-loglevel', 'error', '-i', output, '-i', reference],
    ...['-lavfi', graph, '-f', 'null', '-'],
  ]);
  // The report's PSNR mean is that of the mean squared error over the frames (psnr's average).
  const mse = (await readFile(psnrLog, 'utf8'))
    .split('\n')
    .map((line) => /mse_y:(\S+)/.exec(line)?.[1])
    .filter((v): v is string => v !== undefined)
    .map(Number);
  const psnrOf = (e: number): number =>
    e > 0 ? Math.min(100, 10 * Math.log10(255 ** 2 / e)) : 100;
  const measured: Measured = {
    frames: mse.length,
    psnr: { mean: psnrOf(mean(mse)), min: psnrOf(Math.max(...mse)) },
  };
  if (!VMAF_FFMPEG) return measured;
  const log = JSON.parse(await readFile(vmafLog, 'utf8')) as {
    frames: { metrics: { vmaf: number } }[];
  };
  const scores = log.frames.map((f) => f.metrics.vmaf);
  return {
    ...measured,
    vmaf: { mean: mean(scores), p5: nearestRank(scores, 5), min: Math.min(...scores) },
  };
}

const mean = (xs: readonly number[]): number => xs.reduce((t, x) => t + x, 0) / xs.length;
function nearestRank(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

describe('the quality report pairs each output frame with its own reference frame (services/core/media/quality-args.ts)', function () {
  this.timeout(120_000);
  const handler = createTranscodeHandler(testMediaJobDeps());
  let files: TestServer;
  let dir: string;

  before(async () => {
    files = await startTestServer();
    dir = await mkdtemp(join(tmpdir(), 'quality-alignment-'));
  });
  after(async () => {
    await files.close();
    await rm(dir, { recursive: true, force: true });
  });

  for (const [i, c] of CASES.entries())
    it(`${c.name}: mean, 5th percentile and minimum as frames paired by decode order`, async () => {
      const source = join(dir, `clip-${i}.mp4`);
      await clip(c.rate, source);
      const input = `input-${i}.mp4`;
      await (c.input ?? ((from, to) => ff('-i', from, '-c', 'copy', to)))(
        source,
        join(files.dir, input),
      );
      const output = `output-${i}.${c.spec.container}`;
      const result = await handler(
        transcodeRequested(files, input, output, {
          transcode: { ...c.spec, ...(c.trim ? { trim: c.trim } : {}) },
        }),
        testJobContext('transcode'),
      );
      const report = result.quality as QualityReport;
      const reference = join(dir, `reference-${i}.y4m`);
      await serviceReference(join(files.dir, input), c, reference);
      const apart = await byDecodeOrder(join(files.dir, output), reference, dir);
      const says = `report ${JSON.stringify(report)}; by decode order ${JSON.stringify(apart)}`;

      expect(report.framesCompared, says).to.equal(apart.frames);
      expect(report.psnr?.mean, says).to.be.closeTo(apart.psnr.mean, 0.1);
      expect(report.psnr?.min, says).to.be.closeTo(apart.psnr.min, 0.5);
      if (!apart.vmaf) return;
      expect(report.vmaf?.mean, says).to.be.closeTo(apart.vmaf.mean, 0.1);
      expect(report.vmaf?.p5, says).to.be.closeTo(apart.vmaf.p5, 0.5);
      expect(report.vmaf?.min, says).to.be.closeTo(apart.vmaf.min, 1);
    });
});
