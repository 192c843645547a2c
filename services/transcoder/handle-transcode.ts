import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobResult, TranscodeSpec } from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import type { JobContext, JobHandler } from '../core/jobs/run-job-worker.ts';
import type { MediaInfo, Prober } from '../core/media/probe-media.ts';
import type { PreparedWatermark } from '../core/media/prepare-watermark.ts';
import {
  deliverOutput,
  fetchInput,
  inWorkDir,
  jobWatermark,
  withCpuSlot,
  type MediaJobDeps,
} from '../core/jobs/media-job.ts';
import { checkInputPixels, checkOutputPixels } from '../core/media/pixel-budget.ts';
import { remuxToMp4 } from '../core/media/remux-to-mp4.ts';
import { runEncode } from '../core/media/run-encode.ts';
import { verifyOutput } from '../core/media/verify-output.ts';
import {
  buildTranscodeArgs,
  needsRemux,
  outputSize,
  type OutputSize,
} from './build-transcode-args.ts';

export type TranscoderDeps = MediaJobDeps;

const VIDEO_CODEC = { h264: 'h264', h265: 'hevc', vp8: 'vp8', vp9: 'vp9' } as const;
const CONTENT_TYPE = { mp4: 'video/mp4', webm: 'video/webm' } as const;

/**
 * fetch input (transfer slot) → probe, ffmpeg, verify (CPU slot) → upload (transfer slot).
 * Same job id → same output.
 */
export function createTranscodeHandler(deps: TranscoderDeps): JobHandler {
  return async (job, ctx) => {
    const spec = job.transcode;
    if (!spec) throw new MediaError('internal', 'a transcode job without transcode options');
    return inWorkDir(deps, ctx, async (workDir) => {
      const inputPath = join(workDir, 'input');
      const outputPath = join(workDir, `output.${spec.container}`);
      await fetchInput(deps, job, ctx, inputPath);
      const result = await withCpuSlot(deps, ctx, async () => {
        const input = await deps.probe(inputPath);
        if (!input.video)
          throw new MediaError('input_unsupported', 'the input has no video stream');
        checkInputPixels(input.video, deps.maxPixels);
        const size = outputSize(spec, input.video);
        checkOutputPixels(size, deps.maxPixels);
        const watermark = await jobWatermark(deps, job, ctx, workDir, spec.watermark);
        const encodedPath = needsRemux(spec) ? join(workDir, 'encoded.mkv') : outputPath;
        await encode(deps, ctx, {
          spec,
          inputPath,
          outputPath: encodedPath,
          size,
          input,
          watermark,
        });
        if (encodedPath !== outputPath) await remuxToMp4(encodedPath, outputPath);
        return verify(deps.probe, outputPath, spec, size, input, job.output.url);
      });
      await deliverOutput(deps, job, ctx, outputPath, CONTENT_TYPE[spec.container]);
      return result;
    });
  };
}

async function encode(
  deps: TranscoderDeps,
  ctx: JobContext,
  o: {
    spec: TranscodeSpec;
    inputPath: string;
    outputPath: string;
    size: OutputSize;
    input: MediaInfo;
    watermark: PreparedWatermark | undefined;
  },
): Promise<void> {
  const args = buildTranscodeArgs({
    spec: o.spec,
    inputPath: o.inputPath,
    outputPath: o.outputPath,
    size: o.size,
    hasAudio: Boolean(o.input.audio),
    threads: deps.threads,
    ...(o.watermark ? { watermark: o.watermark } : {}),
  });
  await runEncode(deps, ctx, args, { from: 5, to: 95, expectedSeconds: o.input.durationSeconds });
}

async function verify(
  probe: Prober,
  path: string,
  spec: TranscodeSpec,
  size: OutputSize,
  input: MediaInfo,
  outputUrl: string,
): Promise<JobResult> {
  const out = await verifyOutput(probe, path, {
    format: spec.container,
    videoCodec: VIDEO_CODEC[spec.encoder],
    ...size,
    durationSeconds: input.durationSeconds,
    toleranceSeconds: Math.max(0.5, input.durationSeconds * 0.05),
  });
  const { size: sizeBytes } = await stat(path);
  return {
    outputUrl,
    format: spec.container,
    videoCodec: VIDEO_CODEC[spec.encoder],
    width: size.width,
    height: size.height,
    durationSeconds: Math.round(out.durationSeconds * 1000) / 1000,
    sizeBytes,
    ...(out.bitRate ? { bitrateKbps: Math.round(out.bitRate / 100) / 10 } : {}),
  };
}
