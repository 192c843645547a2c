import { join } from 'node:path';
import type { JobRequested, QualityReport } from '../contracts/types.generated.ts';
import {
  measureQualities,
  writeFramesFile,
  type OutputToMeasure,
  type QualityMeasurement,
  type QualityReference,
} from '../media/measure-quality.ts';
import type { JobContext } from '../worker/job-handler.ts';
import { deliverFile, ffmpegPass, type MediaJobDeps } from './media-job.ts';

/** What a caller asked of the quality report (`quality` of a transcode request). */
export interface QualityAsked {
  /** Measure at all (default true). */
  report?: boolean;
  /** Also upload the per-frame figures beside the output (default false). */
  frames?: boolean;
}

/** A measured report, and the per-frame file to upload when one was asked for. */
export interface MeasuredOutput {
  quality: QualityReport;
  framesFile?: { path: string; url: string };
}

/** An output to report on, and where its per-frame file goes when one is asked for. */
export interface OutputToReport extends OutputToMeasure {
  outputUrl: string;
  /**
   * Where the per-frame file is written and the URL it is published at; default the work
   * directory's `quality.json`, published at framesUrl(outputUrl).
   */
  framesAt?: { path: string; url: string };
}

export interface ReportQualityOptions {
  asked: QualityAsked | undefined;
  reference: QualityReference;
  /** Media seconds the run covers (its metrics' speed). */
  durationSeconds: number;
  workDir: string;
  percent: number;
  /** Why VMAF does not apply to these outputs (the report's `missing`); unset: it does. */
  vmafNotApplicable?: string;
}

/**
 * The quality report of one output (an ffmpeg pass of its own, in the caller's CPU slot):
 * undefined when switched off. Progress stays at `percent` while it runs; each tick keeps the
 * job's lease alive.
 */
export async function reportQuality(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: ReportQualityOptions & OutputToReport,
): Promise<MeasuredOutput | undefined> {
  const measured = await reportQualities(deps, ctx, { ...o, outputs: [o] });
  return measured?.[0];
}

/**
 * The quality reports of outputs made from one reference (a stream's rungs), in order, from one
 * metrics ffmpeg that decodes the reference once (see measureQualities): undefined when switched
 * off. Progress and lease as reportQuality.
 */
export async function reportQualities(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: ReportQualityOptions & { outputs: readonly OutputToReport[] },
): Promise<MeasuredOutput[] | undefined> {
  if (o.asked?.report === false) return undefined;
  const why = o.vmafNotApplicable;
  const tools = why === undefined ? deps.quality : { ...deps.quality, vmaf: { missing: why } };
  const measured = await ffmpegPass(
    deps,
    ctx,
    'quality',
    () => o.durationSeconds,
    () =>
      measureQualities(tools, {
        outputs: o.outputs.map(({ outputPath, outputFilter, referenceFilter }) => ({
          outputPath,
          ...(outputFilter ? { outputFilter } : {}),
          ...(referenceFilter ? { referenceFilter } : {}),
        })),
        reference: o.reference,
        workDir: o.workDir,
        threads: deps.threads,
        stallTimeoutMs: deps.stallTimeoutMs,
        signal: ctx.signal,
        log: ctx.log,
        onProgress: () => ctx.progress(o.percent, 'encode'),
      }),
  );
  const frames = o.asked?.frames === true;
  return Promise.all(
    measured.map((m, k) => withFramesFile(m, frames ? o.outputs[k] : undefined, o.workDir)),
  );
}

/** The report, and its per-frame file written when `output` (one that asked for it) is given. */
async function withFramesFile(
  measured: QualityMeasurement,
  output: OutputToReport | undefined,
  workDir: string,
): Promise<MeasuredOutput> {
  if (!output || measured.frames.length === 0) return { quality: measured.report };
  const { path, url } = output.framesAt ?? {
    path: join(workDir, 'quality.json'),
    url: framesUrl(output.outputUrl),
  };
  await writeFramesFile(path, measured.frames);
  return { quality: { ...measured.report, framesUrl: url }, framesFile: { path, url } };
}

/** Uploads the per-frame file, if there is one, beside the output (same store, same credentials). */
export async function deliverFrames(
  deps: MediaJobDeps,
  job: JobRequested,
  ctx: JobContext,
  measured: MeasuredOutput | undefined,
): Promise<void> {
  if (!measured?.framesFile) return;
  const { path, url } = measured.framesFile;
  await deliverFile(deps, job, ctx, path, { url, contentType: 'application/json' });
}

/**
 * `<output>.quality.json`: the suffix goes on the path, before a query (an http output's URL may
 * carry one; a URL signed for the output alone will not be valid for this path).
 */
export function framesUrl(outputUrl: string): string {
  const at = outputUrl.search(/[?#]/);
  return at < 0
    ? `${outputUrl}.quality.json`
    : `${outputUrl.slice(0, at)}.quality.json${outputUrl.slice(at)}`;
}
