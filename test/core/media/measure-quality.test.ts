import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  findVmafTool,
  inputReference,
  measureQualities,
  measureQuality,
  writeFramesFile,
  type MeasureQualityOptions,
  type QualityTools,
} from '../../../services/core/media/measure-quality.ts';
import { createFfmpegRunner, type FfmpegRunner } from '../../../services/core/media/run-ffmpeg.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';
import { readTestInput } from '../../support/job-input.ts';
import { testQualityTools } from '../../support/media-job-deps.ts';

const run = promisify(execFile);
const FFMPEG = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
// Set: VMAF must be in the report and agree with libvmaf's own pooled figures.
const VMAF_FFMPEG = process.env['TEST_VMAF_FFMPEG'];
const bounds = { memoryLimitBytes: 2 * 1024 ** 3 };
const SIZE = { width: 480, height: 270 };
const SMALL_SCALE = 'scale=320:180:flags=bicubic';

/** The metrics as a hand-written ffmpeg command finds them, independent of the code under test. */
async function independent(ffmpeg: string, out: string, input: string, filter: string) {
  const graph = `[0:v]setpts=PTS-STARTPTS[a];[1:v]scale=480:270:flags=bicubic,format=yuv420p,setpts=PTS-STARTPTS[b];[a][b]${filter}`;
  const { stderr } = await run(ffmpeg, [
    '-hide_banner',
    '-i',
    out,
    '-i',
    input,
    '-lavfi',
    graph,
    '-f',
    'null',
    '-',
  ]);
  return stderr;
}

let dir: string;
let inputPath: string;
let outputPath: string;
let smallPath: string;
let options: () => Promise<MeasureQualityOptions>;

/** The input (BT.709 limited), its 480x270 encode, and a lower rung scaled from that encode. */
async function encodeClips(): Promise<void> {
  // Tagged BT.709 limited so the encode's colour conversion is none and a plain scale is the reference.
  const source = 'testsrc2=size=640x360:rate=25:duration=5,noise=alls=5:allf=t';
  await run(FFMPEG, [
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    source,
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-crf',
    '12',
    '-pix_fmt',
    'yuv420p',
    '-colorspace',
    'bt709',
    '-color_primaries',
    'bt709',
    '-color_trc',
    'bt709',
    '-color_range',
    'tv',
    '-y',
    inputPath,
  ]);
  await run(FFMPEG, [
    '-v',
    'error',
    '-i',
    inputPath,
    '-vf',
    'scale=480:270:flags=bicubic',
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-b:v',
    '250k',
    '-pix_fmt',
    'yuv420p',
    '-y',
    outputPath,
  ]);
  // A lower rung: the 480x270 picture scaled down, as a ladder makes it.
  await run(FFMPEG, [
    '-v',
    'error',
    '-i',
    inputPath,
    '-vf',
    `scale=480:270:flags=bicubic,${SMALL_SCALE}`,
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-b:v',
    '120k',
    '-pix_fmt',
    'yuv420p',
    '-y',
    smallPath,
  ]);
}

describe('measure quality (real ffmpeg)', function () {
  this.timeout(120_000);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'measure-quality-'));
    inputPath = join(dir, 'input.mp4');
    outputPath = join(dir, 'output.mp4');
    smallPath = join(dir, 'small.mp4');
    await encodeClips();
    const input = await readTestInput(inputPath, dir);
    options = async () => ({
      outputPath,
      reference: inputReference(input, SIZE),
      workDir: await mkdtemp(join(dir, 'job-')),
      threads: 2,
      stallTimeoutMs: 30_000,
      signal: new AbortController().signal,
      log: silentLogger,
    });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  describesAgreesWithFfmpegsOwn();

  describesVMAFFfmpegPSNRSSIM();

  describesSeveralOutputsRunFigures();

  describesWritesPerFrameFile();
});

function describesAgreesWithFfmpegsOwn(): void {
  it("agrees with ffmpeg's own psnr and ssim, and with libvmaf's pooled VMAF when TEST_VMAF_FFMPEG is set", async () => {
    const { report, frames } = await measureQuality(testQualityTools(), await options());
    expect(report.framesCompared).to.equal(125);
    expect(frames).to.have.length(125);
    const psnr = await independent(FFMPEG, outputPath, inputPath, 'psnr');
    const psnrY = Number(/PSNR y:(\S+)/.exec(psnr)?.[1]);
    expect(report.psnr?.mean).to.be.closeTo(psnrY, 0.01);
    expect(report.psnr?.min)
      .to.be.below(report.psnr?.mean ?? 0)
      .and.above(20);
    const ssim = await independent(FFMPEG, outputPath, inputPath, 'ssim');
    const ssimY = Number(/SSIM Y:(\S+)/.exec(ssim)?.[1]);
    expect(report.ssim?.mean).to.be.closeTo(ssimY, 0.0001);
    expect(report.ssim?.min).to.be.at.most(report.ssim?.mean ?? 0);
    if (!VMAF_FFMPEG) {
      expect(report.missing).to.deep.equal([
        { metric: 'vmaf', reason: 'TEST_VMAF_FFMPEG is unset' },
      ]);
      return;
    }
    expect(report.missing).to.deep.equal([]);
    const log = join(dir, 'independent-vmaf.json');
    await independent(
      VMAF_FFMPEG,
      outputPath,
      inputPath,
      `libvmaf=model=version=vmaf_v0.6.1:n_subsample=4:log_fmt=json:log_path=${log}`,
    );
    const own = JSON.parse(await readFile(log, 'utf8')) as {
      frames: { frameNum: number; metrics: { vmaf: number } }[];
      pooled_metrics: { vmaf: { mean: number; min: number; harmonic_mean: number } };
    };
    const pooled = own.pooled_metrics.vmaf;
    expect(report.vmaf).to.include({
      model: 'vmaf_v0.6.1',
      subsample: 4,
      framesScored: own.frames.length,
    });
    expect(report.vmaf?.mean).to.be.closeTo(pooled.mean, 0.01);
    expect(report.vmaf?.harmonicMean).to.be.closeTo(pooled.harmonic_mean, 0.01);
    expect(report.vmaf?.min).to.be.closeTo(pooled.min, 0.01);
    expect(report.vmaf?.p5).to.be.within(pooled.min, pooled.mean);
    expect(frames.filter((f) => f.vmaf !== undefined).map((f) => f.frame)).to.deep.equal(
      own.frames.map((f) => f.frameNum),
    );
  });
}

function describesVMAFFfmpegPSNRSSIM(): void {
  it('without a VMAF ffmpeg: PSNR and SSIM, and VMAF named missing with the reason', async () => {
    const tools: QualityTools = {
      ...testQualityTools(),
      vmaf: { missing: 'no ffmpeg with libvmaf is installed (VMAF_FFMPEG)' },
    };
    const { report } = await measureQuality(tools, await options());
    expect(report.vmaf).to.equal(undefined);
    expect(report.psnr?.mean).to.be.above(20);
    expect(report.ssim?.mean).to.be.above(0.5);
    expect(report.missing).to.deep.equal([
      { metric: 'vmaf', reason: 'no ffmpeg with libvmaf is installed (VMAF_FFMPEG)' },
    ]);
  });

  it('a VMAF ffmpeg that fails: measured again without it, VMAF missing with why', async () => {
    const broken = createFfmpegRunner(join(dir, 'no-such-ffmpeg'), bounds);
    const tools: QualityTools = {
      ...testQualityTools(),
      vmaf: { runFfmpeg: broken, subsample: 4 },
    };
    const { report } = await measureQuality(tools, await options());
    expect(report.psnr?.mean).to.be.above(20);
    expect(report.missing).to.deep.equal([
      { metric: 'vmaf', reason: 'the measurement failed: ffmpeg could not start' },
    ]);
  });

  it('VMAF alone: the same VMAF, no PSNR or SSIM run; without a VMAF ffmpeg nothing is measured', async () => {
    const broken = createFfmpegRunner(join(dir, 'no-such-ffmpeg'), bounds);
    const none = await measureQuality(
      { runFfmpeg: broken, vmaf: { missing: 'none here' } },
      { ...(await options()), vmafOnly: true },
    );
    // The service's ffmpeg is never run (it would fail here).
    expect(none.report).to.deep.equal({
      framesCompared: 0,
      missing: [{ metric: 'vmaf', reason: 'none here' }],
    });
    if (!VMAF_FFMPEG) return;
    const tools = testQualityTools();
    const only = await measureQuality(
      { ...tools, runFfmpeg: broken },
      { ...(await options()), vmafOnly: true },
    );
    const all = await measureQuality(tools, await options());
    expect(only.report.psnr).to.equal(undefined);
    expect(only.report.ssim).to.equal(undefined);
    expect(only.report.vmaf).to.deep.equal(all.report.vmaf);
    expect(only.report.missing).to.deep.equal([]);
  });

  it('every metrics ffmpeg failing: an empty report that says why, never a failure', async () => {
    const broken = createFfmpegRunner(join(dir, 'no-such-ffmpeg'), bounds);
    const tools: QualityTools = { runFfmpeg: broken, vmaf: { missing: 'none here' } };
    const { report, frames } = await measureQuality(tools, await options());
    expect(frames).to.deep.equal([]);
    expect(report).to.deep.equal({
      framesCompared: 0,
      missing: [
        { metric: 'vmaf', reason: 'none here' },
        { metric: 'psnr', reason: 'the measurement failed: ffmpeg could not start' },
        { metric: 'ssim', reason: 'the measurement failed: ffmpeg could not start' },
      ],
    });
  });

  it('a stopped job stops the measurement', async () => {
    const controller = new AbortController();
    const pending = measureQuality(testQualityTools(), {
      ...(await options()),
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    let error: unknown;
    await pending.catch((e: unknown) => (error = e));
    expect(error).to.have.property('code', 'interrupted');
  });
}

function describesSeveralOutputsRunFigures(): void {
  it('several outputs in one run: each the figures it has measured alone, the reference decoded once', async () => {
    const o = await options();
    const calls: (readonly string[])[] = [];
    const counting =
      (runFfmpeg: FfmpegRunner): FfmpegRunner =>
      (args, opts) => {
        calls.push(args);
        return runFfmpeg(args, opts);
      };
    const tools = testQualityTools();
    const vmaf = tools.vmaf;
    const counted: QualityTools = {
      runFfmpeg: counting(tools.runFfmpeg),
      vmaf: 'runFfmpeg' in vmaf ? { ...vmaf, runFfmpeg: counting(vmaf.runFfmpeg) } : vmaf,
    };
    const both = await measureQualities(counted, {
      ...o,
      outputs: [{ outputPath }, { outputPath: smallPath, referenceFilter: SMALL_SCALE }],
    });
    expect(calls).to.have.length(1);
    expect(calls[0]?.filter((a) => a === inputPath)).to.have.length(1);
    const alone = [
      await measureQuality(tools, await options()),
      await measureQuality(tools, {
        ...(await options()),
        outputPath: smallPath,
        referenceFilter: SMALL_SCALE,
      }),
    ];
    expect(both.map((m) => m.report)).to.deep.equal(alone.map((m) => m.report));
    expect(both.map((m) => m.frames)).to.deep.equal(alone.map((m) => m.frames));
    expect(both[1]?.report.psnr?.mean).to.not.equal(both[0]?.report.psnr?.mean);
    expect(both[1]?.report.framesCompared).to.equal(125);
  });

  it('several outputs and a VMAF ffmpeg that fails: each measured again without it, each missing VMAF alone', async () => {
    const broken = createFfmpegRunner(join(dir, 'no-such-ffmpeg'), bounds);
    const tools: QualityTools = {
      ...testQualityTools(),
      vmaf: { runFfmpeg: broken, subsample: 4 },
    };
    const both = await measureQualities(tools, {
      ...(await options()),
      outputs: [{ outputPath }, { outputPath: smallPath, referenceFilter: SMALL_SCALE }],
    });
    expect(both).to.have.length(2);
    for (const { report } of both) {
      expect(report.psnr?.mean).to.be.above(20);
      expect(report.ssim?.mean).to.be.above(0.5);
      expect(report.missing).to.deep.equal([
        { metric: 'vmaf', reason: 'the measurement failed: ffmpeg could not start' },
      ]);
    }
    expect(both[0]?.report.missing).to.not.equal(both[1]?.report.missing);
  });
}

function describesWritesPerFrameFile(): void {
  it('writes the per-frame file as JSON, one frame a line', async () => {
    const path = join(dir, 'frames.json');
    await writeFramesFile(path, [
      { frame: 0, psnrY: 40, ssimY: 0.98, vmaf: 90.5 },
      { frame: 1, psnrY: 39, ssimY: 0.97 },
    ]);
    const text = await readFile(path, 'utf8');
    expect(text.split('\n')).to.have.length(5);
    expect(JSON.parse(text)).to.deep.equal({
      version: 1,
      vmafModel: 'vmaf_v0.6.1',
      frames: [
        { frame: 0, psnrY: 40, ssimY: 0.98, vmaf: 90.5 },
        { frame: 1, psnrY: 39, ssimY: 0.97 },
      ],
    });
  });

  it('finds a VMAF ffmpeg only where one with libvmaf is', async () => {
    const signal = new AbortController().signal;
    const find = (path: string) =>
      findVmafTool(path, createFfmpegRunner(path, bounds), { subsample: 4, signal });
    expect(await find(join(dir, 'absent'))).to.deep.equal({
      missing: 'no ffmpeg with libvmaf is installed (VMAF_FFMPEG)',
    });
    const debian = (await run('sh', ['-c', `command -v ${FFMPEG}`])).stdout.trim();
    expect(await find(debian)).to.deep.equal({
      missing: 'the ffmpeg of VMAF_FFMPEG has no libvmaf',
    });
    if (VMAF_FFMPEG) expect(await find(VMAF_FFMPEG)).to.have.property('subsample', 4);
  });
}
