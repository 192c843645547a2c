import { join } from 'node:path';
import type { JobRequested, QualityReport } from '../contracts/types.generated.ts';
import {
  measureQuality,
  writeFramesFile,
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

/**
 * The quality report of one output (an ffmpeg pass of its own, in the caller's CPU slot):
 * undefined when switched off. Progress stays at `percent` while it runs; each tick keeps the
 * job's lease alive.
 */
export async function reportQuality(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: {
    asked: QualityAsked | undefined;
    outputPath: string;
    outputUrl: string;
    durationSeconds: number;
    reference: QualityReference;
    workDir: string;
    percent: number;
    /** Filters for the decoded output before the comparison (a GIF's frame rate). */
    outputFilter?: string;
    /** Why VMAF does not apply to this output (the report's `missing`); unset: it does. */
    vmafNotApplicable?: string;
    /**
     * Where the per-frame file is written and the URL it is published at; default the work
     * directory's `quality.json`, published at framesUrl(outputUrl).
     */
    framesAt?: { path: string; url: string };
  },
): Promise<MeasuredOutput | undefined> {
  if (o.asked?.report === false) return undefined;
  const why = o.vmafNotApplicable;
  const tools = why === undefined ? deps.quality : { ...deps.quality, vmaf: { missing: why } };
  const measured = await ffmpegPass(
    deps,
    ctx,
    'quality',
    () => o.durationSeconds,
    () =>
      measureQuality(tools, {
        outputPath: o.outputPath,
        reference: o.reference,
        workDir: o.workDir,
        threads: deps.threads,
        stallTimeoutMs: deps.stallTimeoutMs,
        signal: ctx.signal,
        log: ctx.log,
        onProgress: () => ctx.progress(o.percent, 'encode'),
        ...(o.outputFilter ? { outputFilter: o.outputFilter } : {}),
      }),
  );
  if (!o.asked?.frames || measured.frames.length === 0) return { quality: measured.report };
  const { path, url } = o.framesAt ?? {
    path: join(o.workDir, 'quality.json'),
    url: framesUrl(o.outputUrl),
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
