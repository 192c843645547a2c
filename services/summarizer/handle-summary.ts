import { rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  JobRequested,
  JobResult,
  LoudnessReport,
  MediaDescription,
  SummarySpec,
} from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import type { JobContext, JobHandler } from '../core/worker/job-handler.ts';
import {
  deliverOutput,
  ffmpegPass,
  fetchInput,
  inWorkDir,
  jobWatermark,
  withCpuSlot,
  type MediaJobDeps,
} from '../core/media-job/media-job.ts';
import { outputSize, type OutputSize } from '../core/media/output-size.ts';
import { describeInput, describeOutput } from '../core/media/describe-media.ts';
import { checkOutputPixels } from '../core/media/pixel-budget.ts';
import { checkDecodedLength, readInput, type JobInput } from '../core/media/read-input.ts';
import { planJobLoudness, reportLoudness } from '../core/media-job/normalise-loudness.ts';
import { trimmedInput } from '../core/media/trim.ts';
import { runEncodes } from '../core/media-job/run-encode.ts';
import { verifyOutput, type VerifiedOutput } from '../core/media/verify-output.ts';
import { analyseVideo } from './analyse-video.ts';
import {
  deliverFrames,
  reportQuality,
  type MeasuredOutput,
} from '../core/media-job/report-quality.ts';
import {
  buildSummaryArgs,
  clipsOf,
  summaryQualityOptions,
  summaryLoudnessArgs,
  summaryReference,
  type SummaryRender,
} from './build-summary-args.ts';
import { joinGifs } from './join-gifs.ts';
import { collectPaletteSamples } from './palette-samples.ts';
import { selectSegments, summaryTargetSeconds, type SummarySegment } from './select-segments.ts';

export type SummarizerDeps = MediaJobDeps;

/** Percent of the job reached when the analysis ends and the render starts. */
const ANALYSED_PERCENT = 35;
/** Percent reached when a GIF's palette is made. */
const PALETTE_PERCENT = 36;

/**
 * fetch input (transfer slot) → probe, analyse, select, render (gif or mp4), verify, measure the
 * quality (CPU slot) → upload the summary and the per-frame figures if asked (transfer slot). Same input and options → same segments, and for MP4 the same bytes.
 */
export function createSummaryHandler(deps: SummarizerDeps): JobHandler {
  return async (job, ctx) => {
    const spec = job.summary;
    if (!spec) throw new MediaError('internal', 'a summary job without summary options');
    return inWorkDir(deps, ctx, async (workDir) => {
      const inputPath = join(workDir, 'input');
      const outputPath = join(workDir, `summary.${spec.format}`);
      await fetchInput(deps, job, ctx, inputPath);
      const { out, segments, input, measured, loudness } = await withCpuSlot(deps, ctx, () =>
        summarise(deps, ctx, job, spec, { workDir, inputPath, outputPath }),
      );
      await deliverOutput(
        deps,
        job,
        ctx,
        outputPath,
        spec.format === 'gif' ? 'image/gif' : 'video/mp4',
      );
      await deliverFrames(deps, job, ctx, measured);
      const result: JobResult = {
        outputUrl: job.output.url,
        format: spec.format,
        videoCodec: out.video.codec,
        width: out.video.width,
        height: out.video.height,
        durationSeconds: Math.round(out.durationSeconds * 1000) / 1000,
        sizeBytes: (await stat(outputPath)).size,
        segments,
        input,
        output: describeOutput(out),
        ...(measured ? { quality: measured.quality } : {}),
        ...(loudness ? { loudness } : {}),
      };
      return result;
    });
  };
}

async function summarise(
  deps: SummarizerDeps,
  ctx: JobContext,
  job: JobRequested,
  spec: SummarySpec,
  paths: { workDir: string; inputPath: string; outputPath: string },
): Promise<{
  out: VerifiedOutput;
  segments: SummarySegment[];
  input: MediaDescription;
  measured: MeasuredOutput | undefined;
  loudness: LoudnessReport | undefined;
}> {
  const input = trimmedInput(await readInput(deps, ctx.signal, paths), spec.trim);
  if (input.info.durationSeconds <= 0)
    throw new MediaError(
      'input_unsupported',
      'the input has no video stream with a known duration',
    );
  const size = summarySize(spec, input.video.display);
  checkOutputPixels(size, deps.maxPixels);
  const timeline = await analyse(deps, ctx, input, spec, paths.workDir);
  checkDecodedLength(input.info, timeline.decodedSeconds);
  const segments = selectSegments(timeline, {
    targetSeconds: summaryTargetSeconds(input.info.durationSeconds),
  });
  const samplesPath = join(paths.workDir, 'palette-samples.rgb');
  const samples = timeline.paletteSamples;
  if (samples) await collectPaletteSamples(samples, segments, samplesPath);
  const watermark = await jobWatermark(deps, job, ctx, paths.workDir, spec.watermark);
  const clips = clipsOf(segments);
  const total = clips.reduce((sum, c) => sum + c.durationSeconds, 0);
  const render: SummaryRender = {
    spec,
    inputPath: input.path,
    outputPath: paths.outputPath,
    palettePath: join(paths.workDir, 'palette.png'),
    partsDir: paths.workDir,
    clips,
    size,
    picture: input,
    ...(input.trim ? { trim: input.trim } : {}),
    ...(input.info.audio ? { audio: input.info.audio } : {}),
    describedByHeader: input.info.formatName.split(',').includes('mp4'),
    ...(samples
      ? {
          paletteSamples: { path: samplesPath, width: samples.width, height: samples.height },
        }
      : {}),
    threads: deps.threads,
    ...(watermark ? { watermark } : {}),
  };
  const plan = buildSummaryArgs(render);
  for (const file of plan.files) await writeFile(file.path, file.content, 'utf8');
  const spans = encodeSpans(plan.steps.length, spec.format, total);
  for (const [k, runs] of plan.steps.entries())
    await runEncodes(deps, ctx, runs, spans[k] ?? { from: 95, to: 95, expectedSeconds: total });
  if (plan.gifParts) await joinGifs(plan.gifParts, paths.outputPath);
  const loudness = await evenLoudness(deps, ctx, { render, total, workDir: paths.workDir });
  const out = await verifyOutput(deps.probe, paths.outputPath, {
    format: spec.format,
    videoCodec: spec.format === 'gif' ? 'gif' : 'h264',
    ...size,
    durationSeconds: total,
    toleranceSeconds: Math.max(0.5, total * 0.1),
    ...(spec.format === 'mp4' && (spec.removeAudio || !input.info.audio) ? { audio: false } : {}),
  });
  const measured = await measureSummary(deps, ctx, job, { render, out, workDir: paths.workDir });
  return { out, segments, input: describeInput(input), measured, loudness };
}

/**
 * An MP4 summary's loudness, when asked and it has audio: the summary's own audio (the clips the
 * summary shows, not the whole input) measured, then its audio made again through the gain
 * (summaryLoudnessArgs), and measured once more for the report.
 */
async function evenLoudness(
  deps: SummarizerDeps,
  ctx: JobContext,
  o: { render: SummaryRender; total: number; workDir: string },
): Promise<LoudnessReport | undefined> {
  const { spec, audio, outputPath } = o.render;
  if (spec.format !== 'mp4' || spec.removeAudio || !audio || !spec.loudness) return undefined;
  const renderedPath = join(o.workDir, 'rendered.mp4');
  await rename(outputPath, renderedPath);
  const plan = await planJobLoudness(deps, ctx, {
    asked: spec.loudness,
    input: { path: renderedPath, stream: 'a:0', info: { audio } as JobInput['info'] },
    encoder: 'aac',
    workDir: o.workDir,
  });
  if (!plan) throw new MediaError('internal', 'a summary with audio and no loudness plan');
  if (plan.filter) {
    const args = summaryLoudnessArgs(o.render, renderedPath, plan.filter);
    await runEncodes(deps, ctx, [args], { from: 95, to: 95, expectedSeconds: o.total });
  } else await rename(renderedPath, outputPath);
  return reportLoudness(deps, ctx, plan, { outputPath, workDir: o.workDir });
}

/** The analysis pass: scene changes and motion over the whole input (and palette samples for a GIF). */
function analyse(
  deps: SummarizerDeps,
  ctx: JobContext,
  input: Parameters<typeof analyseVideo>[1]['input'],
  spec: SummarySpec,
  workDir: string,
): ReturnType<typeof analyseVideo> {
  return ffmpegPass(
    deps,
    ctx,
    'analyse',
    () => input.info.durationSeconds,
    () =>
      analyseVideo(deps, {
        input,
        scratchPath: join(workDir, 'analysis'),
        threads: deps.threads,
        signal: ctx.signal,
        onProgress: (fraction) => ctx.progress(5 + (ANALYSED_PERCENT - 5) * fraction, 'encode'),
        paletteSamples: spec.format === 'gif',
      }),
  );
}

/**
 * The progress span of each encode step. A GIF's palette from samples takes a fraction of a
 * second; an MP4's join of its parts copies the video and encodes the audio, a few percent of the
 * render.
 */
function encodeSpans(
  steps: number,
  format: SummarySpec['format'],
  total: number,
): { from: number; to: number; expectedSeconds: number }[] {
  if (steps <= 1) return [{ from: ANALYSED_PERCENT, to: 95, expectedSeconds: total }];
  return format === 'gif'
    ? [
        { from: ANALYSED_PERCENT, to: PALETTE_PERCENT, expectedSeconds: 0 },
        { from: PALETTE_PERCENT, to: 95, expectedSeconds: total },
      ]
    : [
        { from: ANALYSED_PERCENT, to: 90, expectedSeconds: total },
        { from: 90, to: 95, expectedSeconds: total },
      ];
}

/** The summary's quality report, against its clips of the input (see summaryReference). */
function measureSummary(
  deps: SummarizerDeps,
  ctx: JobContext,
  job: JobRequested,
  o: { render: SummaryRender; out: VerifiedOutput; workDir: string },
): Promise<MeasuredOutput | undefined> {
  return reportQuality(deps, ctx, {
    asked: o.render.spec.quality,
    outputPath: o.render.outputPath,
    outputUrl: job.output.url,
    durationSeconds: o.out.durationSeconds,
    reference: summaryReference(o.render),
    workDir: o.workDir,
    percent: 95,
    ...summaryQualityOptions(o.render.spec),
  });
}

/**
 * `width` as given, else the input's displayed width (spec/api.md §4), made even; the displayed
 * aspect ratio kept.
 */
function summarySize(spec: SummarySpec, input: OutputSize): OutputSize {
  return outputSize({ width: spec.width ?? input.width }, input);
}
