import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobResult } from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import type { JobHandler } from '../core/jobs/run-job-worker.ts';
import { prepareWatermark } from '../core/media/prepare-watermark.ts';
import { deliverOutput, fetchInput, inWorkDir, withCpuSlot, type MediaJobDeps } from '../core/jobs/media-job.ts';
import { checkInputPixels, checkOutputPixels } from '../core/media/pixel-budget.ts';
import { buildSummaryArgs, DEFAULT_GIF_WIDTH } from './build-summary-args.ts';
import { planSegments } from './plan-segments.ts';

export type SummarizerDeps = MediaJobDeps;

const even = (n: number): number => Math.max(2, Math.floor(n / 2) * 2);

/** fetch input (transfer slot) → plan segments, render (gif or mp4), verify (CPU slot) → upload (transfer slot). */
export function createSummaryHandler(deps: SummarizerDeps): JobHandler {
  return async (job, ctx) => {
    const spec = job.summary;
    if (!spec) throw new MediaError('internal', 'a summary job without summary options');
    return inWorkDir(deps, ctx, async (workDir) => {
      const inputPath = join(workDir, 'input');
      const outputPath = join(workDir, `summary.${spec.format}`);
      const expectedCodec = spec.format === 'gif' ? 'gif' : 'h264';
      await fetchInput(deps, job, ctx, inputPath);
      const { out, segments } = await withCpuSlot(deps, ctx, async () => {
        const input = await deps.probe(inputPath);
        if (!input.video || input.durationSeconds <= 0) throw new MediaError('input_unsupported', 'the input has no video stream with a known duration');
        checkInputPixels(input.video, deps.maxPixels);
        const segments = planSegments(input.durationSeconds);
        const width = even(spec.width ?? (spec.format === 'gif' ? Math.min(DEFAULT_GIF_WIDTH, input.video.width) : input.video.width));
        checkOutputPixels({ width, height: even((input.video.height * width) / input.video.width) }, deps.maxPixels);
        const watermark = spec.watermark ? await prepareWatermark(spec.watermark, job.orgId, workDir, { http: deps.httpStore, probe: deps.probe, fontFile: deps.fontFile, imagesDir: deps.watermarkImagesDir, signal: ctx.signal }) : undefined;
        const total = segments.reduce((sum, s) => sum + s.durationSeconds, 0);
        await deps.runFfmpeg(
          buildSummaryArgs({ spec, inputPath, outputPath, segments, width, hasAudio: Boolean(input.audio), threads: deps.threads, ...(watermark ? { watermark } : {}) }),
          { signal: ctx.signal, stallTimeoutMs: deps.stallTimeoutMs, onProgress: (p) => ctx.progress(5 + 90 * Math.min(1, p.outTimeSeconds / total), 'encode') },
        );
        const out = await deps.probe(outputPath);
        if (out.video?.codec !== expectedCodec || out.video.width !== width || Math.abs(out.durationSeconds - total) > Math.max(0.5, total * 0.1))
          throw new MediaError('output_invalid', `the summary failed verification (${out.video?.codec ?? 'no video'} ${out.video?.width ?? 0}px ${out.durationSeconds}s)`);
        return { out: { ...out, video: out.video }, segments };
      });
      await deliverOutput(deps, job, ctx, outputPath, spec.format === 'gif' ? 'image/gif' : 'video/mp4');
      const result: JobResult = {
        outputUrl: job.output.url,
        format: spec.format,
        videoCodec: expectedCodec,
        width: out.video.width,
        height: out.video.height,
        durationSeconds: Math.round(out.durationSeconds * 1000) / 1000,
        sizeBytes: (await stat(outputPath)).size,
        segments,
      };
      return result;
    });
  };
}
