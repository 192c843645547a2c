import { createWriteStream } from 'node:fs';
import { access, constants } from 'node:fs/promises';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import type { QualityReport } from '../contracts/types.generated.ts';
import { MediaError } from '../errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { FfmpegRunner } from './run-ffmpeg.ts';
import {
  qualityArgs,
  VMAF_MODEL,
  type QualityLogs,
  type QualityReference,
} from './quality-args.ts';
import { readPsnrLog, readSsimLog, readVmafLog } from './quality-logs.ts';
import { summarizePsnr, summarizeSsim, summarizeVmaf } from './quality-summary.ts';

export { inputReference, type QualityReference } from './quality-args.ts';

/** An ffmpeg with libvmaf, run with the same bounds as every ffmpeg. */
export interface VmafTool {
  runFfmpeg: FfmpegRunner;
  /** Score every n-th frame (1: every frame). */
  subsample: number;
}

/** What the quality report is measured with. */
export interface QualityTools {
  /** The service's ffmpeg: psnr and ssim, and the whole report when there is no VMAF tool. */
  runFfmpeg: FfmpegRunner;
  /** The ffmpeg with libvmaf, or why there is none (for the report's `missing`). */
  vmaf: VmafTool | { missing: string };
}

/** One output to measure (see QualityTarget). */
export interface OutputToMeasure {
  outputPath: string;
  /** Filters for the decoded output before the comparison (a GIF's frame rate). */
  outputFilter?: string;
  /** Filters taking the shared reference to this output's geometry (a lower rung's scale). */
  referenceFilter?: string;
}

export interface MeasureQualitiesOptions {
  /** Measured in one run against the one reference, each with logs of its own. */
  outputs: readonly OutputToMeasure[];
  reference: QualityReference;
  /** Where the per-frame logs go (the job's work directory). */
  workDir: string;
  threads: number;
  stallTimeoutMs: number;
  signal: AbortSignal;
  log: Logger;
  /** Seconds of the outputs measured so far (each call also proves the run alive). */
  onProgress?: (seconds: number) => void;
  /**
   * VMAF alone (no PSNR, no SSIM, nothing measured without the VMAF tool): for a measurement
   * that only needs VMAF's mean, at a third of the metrics' cost (the per-title probe).
   */
  vmafOnly?: boolean;
}

/** One output measured on its own. */
export type MeasureQualityOptions = Omit<MeasureQualitiesOptions, 'outputs'> & OutputToMeasure;

/** One frame's figures in the per-frame file; `vmaf` only on the frames it scored. */
export interface FrameFigures {
  /** 0-based index of the output frame. */
  frame: number;
  psnrY?: number;
  ssimY?: number;
  vmaf?: number;
}

export interface QualityMeasurement {
  report: QualityReport;
  frames: FrameFigures[];
}

type Missing = QualityReport['missing'][number];
type Metric = Missing['metric'];

/** Measures one output against its reference (see measureQualities). */
export async function measureQuality(
  tools: QualityTools,
  o: MeasureQualityOptions,
): Promise<QualityMeasurement> {
  const { outputPath, outputFilter, referenceFilter, ...rest } = o;
  const output = {
    outputPath,
    ...(outputFilter ? { outputFilter } : {}),
    ...(referenceFilter ? { referenceFilter } : {}),
  };
  const [measured] = await measureQualities(tools, { ...rest, outputs: [output] });
  if (!measured) throw new Error('a measurement of one output gave none');
  return measured;
}

/**
 * Measures outputs against one reference with one ffmpeg (the VMAF one when there is one), so
 * the reference is decoded once for all of them (a stream's rungs); each output's measurement,
 * in order. Never fails for want of a tool or for a metrics ffmpeg that fails: the reports then
 * hold what could be measured and say why the rest is missing (a failed VMAF run costs VMAF
 * only). A stopped job still stops it.
 */
export async function measureQualities(
  tools: QualityTools,
  o: MeasureQualitiesOptions,
): Promise<QualityMeasurement[]> {
  const missing: Missing[] = [];
  if ('runFfmpeg' in tools.vmaf) {
    const vmaf = tools.vmaf;
    // Its failure costs VMAF only: PSNR and SSIM are measured again with the service's ffmpeg.
    const measured = await attempt(o, ['vmaf'], missing, () =>
      measureWith(vmaf.runFfmpeg, o, true, vmaf.subsample),
    );
    if (measured) return measured;
  } else missing.push({ metric: 'vmaf', reason: tools.vmaf.missing });
  const none = (): QualityMeasurement => ({
    report: { framesCompared: 0, missing: [...missing] },
    frames: [],
  });
  if (o.vmafOnly) return o.outputs.map(none);
  const measured = await attempt(o, ['psnr', 'ssim'], missing, () =>
    measureWith(tools.runFfmpeg, o, false, 1),
  );
  return measured ?? o.outputs.map(none);
}

/** Runs one measurement; on a failure that is not a stop, names the metrics missing and why. */
async function attempt(
  o: MeasureQualitiesOptions,
  metrics: readonly Metric[],
  missing: Missing[],
  run: () => Promise<QualityMeasurement[]>,
): Promise<QualityMeasurement[] | undefined> {
  try {
    const measured = await run();
    for (const m of measured) m.report.missing.unshift(...missing);
    return measured;
  } catch (error) {
    if (o.signal.aborted) throw error;
    o.log.warn('quality.measure_failed', { metrics, error });
    const why = error instanceof MediaError ? error.message : 'its logs could not be read';
    const reason = `the measurement failed: ${why}`.slice(0, 300);
    for (const metric of metrics)
      if (!missing.some((m) => m.metric === metric)) missing.push({ metric, reason });
    return undefined;
  }
}

/** One metrics ffmpeg over every output, then each output's logs read into its measurement. */
async function measureWith(
  runFfmpeg: FfmpegRunner,
  o: MeasureQualitiesOptions,
  withVmaf: boolean,
  subsample: number,
): Promise<QualityMeasurement[]> {
  const targets = o.outputs.map((output, k) => ({
    ...output,
    logs: logsOf(o.workDir, k, withVmaf, o.vmafOnly === true),
  }));
  const args = qualityArgs({
    targets,
    reference: o.reference,
    vmafSubsample: subsample,
    threads: o.threads,
  });
  await runFfmpeg(args, {
    signal: o.signal,
    stallTimeoutMs: o.stallTimeoutMs,
    onProgress: (p) => o.onProgress?.(p.outTimeSeconds),
  });
  return Promise.all(targets.map((t) => readMeasurement(t.logs, subsample)));
}

/** Output `k`'s logs in the work directory. */
function logsOf(workDir: string, k: number, withVmaf: boolean, vmafOnly: boolean): QualityLogs {
  const at = (name: string): string => join(workDir, `quality-${k}-${name}`);
  const logs = vmafOnly ? {} : { psnr: at('psnr.log'), ssim: at('ssim.log') };
  return withVmaf ? { ...logs, vmaf: at('vmaf.csv') } : logs;
}

/** An output's report and per-frame figures from its three logs. */
async function readMeasurement(logs: QualityLogs, subsample: number): Promise<QualityMeasurement> {
  const [psnr, ssim, vmaf] = await Promise.all([
    logs.psnr === undefined ? [] : readPsnrLog(logs.psnr),
    logs.ssim === undefined ? [] : readSsimLog(logs.ssim),
    logs.vmaf === undefined ? undefined : readVmafLog(logs.vmaf),
  ]);
  const vmafSummary = vmaf && summarizeVmaf(vmaf);
  const psnrSummary = summarizePsnr(psnr);
  const ssimSummary = summarizeSsim(ssim);
  const report: QualityReport = {
    // VMAF-only: the frames libvmaf logged (those it scored, or every frame).
    framesCompared: Math.max(psnr.length, ssim.length) || (vmaf?.length ?? 0),
    ...(vmafSummary ? { vmaf: { model: VMAF_MODEL, ...vmafSummary, subsample } } : {}),
    ...(psnrSummary ? { psnr: psnrSummary } : {}),
    ...(ssimSummary ? { ssim: ssimSummary } : {}),
    missing: [],
  };
  return { report, frames: perFrame(psnr, ssim, vmaf ?? []) };
}

/** The three logs joined by frame (psnr and ssim count from 1, libvmaf from 0). */
function perFrame(
  psnr: readonly { n: number; psnrY: number }[],
  ssim: readonly { n: number; ssimY: number }[],
  vmaf: readonly { frame: number; vmaf: number }[],
): FrameFigures[] {
  const frames = new Map<number, FrameFigures>();
  const at = (frame: number): FrameFigures =>
    frames.get(frame) ?? (frames.set(frame, { frame }).get(frame) as FrameFigures);
  for (const p of psnr) at(p.n - 1).psnrY = p.psnrY;
  for (const s of ssim) at(s.n - 1).ssimY = s.ssimY;
  for (const v of vmaf) at(v.frame).vmaf = Number(v.vmaf.toFixed(3));
  return [...frames.values()].sort((a, b) => a.frame - b.frame);
}

/**
 * Writes the per-frame file: `{"version":1,"model":…,"frames":[{"frame":0,"psnrY":…,…},…]}`,
 * one frame a line, streamed (a long output has hundreds of thousands).
 */
export async function writeFramesFile(
  path: string,
  frames: readonly FrameFigures[],
): Promise<void> {
  const out = createWriteStream(path);
  out.write(`{"version":1,"vmafModel":"${VMAF_MODEL}","frames":[\n`);
  frames.forEach((f, k) => out.write(`${JSON.stringify(f)}${k < frames.length - 1 ? ',' : ''}\n`));
  out.end(']}\n');
  await finished(out);
}

/**
 * The VMAF tool at `path`, or why there is none: no such executable, or an ffmpeg without
 * libvmaf (asked once, with `-filters`, at start).
 */
export async function findVmafTool(
  path: string,
  runFfmpeg: FfmpegRunner,
  o: { subsample: number; signal: AbortSignal },
): Promise<VmafTool | { missing: string }> {
  const unset = 'no ffmpeg with libvmaf is installed (VMAF_FFMPEG)';
  if (
    !(await access(path, constants.X_OK).then(
      () => true,
      () => false,
    ))
  )
    return { missing: unset };
  let listing = '';
  try {
    await runFfmpeg(['-filters'], {
      signal: o.signal,
      stallTimeoutMs: 30_000,
      onStdout: (chunk) => void (listing += chunk.toString('utf8')),
    });
  } catch {
    return { missing: 'the ffmpeg of VMAF_FFMPEG could not be run' };
  }
  if (!/^\s*\S+\s+libvmaf\s/m.test(listing))
    return { missing: 'the ffmpeg of VMAF_FFMPEG has no libvmaf' };
  return { runFfmpeg, subsample: o.subsample };
}
