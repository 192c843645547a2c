import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobResult, TranscodeSpec } from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import type { JobContext, JobHandler } from '../core/worker/job-handler.ts';
import { describeInput, describeOutput } from '../core/media/describe-media.ts';
import type { Prober } from '../core/media/probe-media.ts';
import { checkDecodedLength, readInput, type JobInput } from '../core/media/read-input.ts';
import { trimmedInput } from '../core/media/trim.ts';
import {
  deliverOutput,
  fetchInput,
  inWorkDir,
  jobWatermark,
  withCpuSlot,
  type MediaJobDeps,
} from '../core/media-job/media-job.ts';
import { checkOutputPixels } from '../core/media/pixel-budget.ts';
import { inputReference } from '../core/media/measure-quality.ts';
import { deliverFrames, reportQuality } from '../core/media-job/report-quality.ts';
import { planJobLoudness, reportLoudness } from '../core/media-job/normalise-loudness.ts';
import { remuxToMp4 } from '../core/media/remux-to-mp4.ts';
import { runEncode } from '../core/media-job/run-encode.ts';
import { verifyOutput } from '../core/media/verify-output.ts';
import {
  firstPassShare,
  needsRemux,
  outputSize,
  type OutputSize,
  type TranscodeOptions,
} from './build-transcode-args.ts';
import { encodeToRate } from './encode-to-rate.ts';
import type { TranscodeCaptions } from './caption-args.ts';
import { captionsReport, transcodeCaptions } from './transcode-captions.ts';

export type TranscoderDeps = MediaJobDeps;

const VIDEO_CODEC = { h264: 'h264', h265: 'hevc', vp8: 'vp8', vp9: 'vp9' } as const;
const CONTENT_TYPE = { mp4: 'video/mp4', webm: 'video/webm' } as const;

/**
 * fetch input (transfer slot) → read the input, ffmpeg, verify, measure the quality (CPU slot) →
 * upload the output and the per-frame figures if asked (transfer slot). Same job id → same output.
 */
export function createTranscodeHandler(deps: TranscoderDeps): JobHandler {
  return async (job, ctx) => {
    const spec = job.transcode;
    if (!spec) throw new MediaError('internal', 'a transcode job without transcode options');
    return inWorkDir(deps, ctx, async (workDir) => {
      const inputPath = join(workDir, 'input');
      const outputPath = join(workDir, `output.${spec.container}`);
      await fetchInput(deps, job, ctx, inputPath);
      const { result, measured } = await withCpuSlot(deps, ctx, async () => {
        const input = trimmedInput(
          await readInput(deps, ctx.signal, { inputPath, workDir }),
          spec.trim,
        );
        const size = outputSize(spec, input.video.display);
        checkOutputPixels(size, deps.maxPixels);
        const watermark = await jobWatermark(deps, job, ctx, workDir, spec.watermark);
        const captions = await transcodeCaptions(deps, ctx, { spec, input, size, workDir });
        const encodedPath = needsRemux(spec) ? join(workDir, 'encoded.mkv') : outputPath;
        const loudness = await planJobLoudness(deps, ctx, {
          asked: spec.loudness,
          input,
          encoder: spec.container === 'webm' ? 'opus' : 'aac',
          workDir,
        });
        const decoded = await encode(deps, ctx, {
          spec,
          input,
          outputPath: encodedPath,
          size,
          threads: deps.threads,
          passLogPrefix: join(workDir, 'pass'),
          ...(watermark ? { watermark } : {}),
          ...(loudness?.filter ? { loudnessFilter: loudness.filter } : {}),
          ...(captions ? { captions } : {}),
        });
        checkDecodedLength(input.info, decoded);
        if (encodedPath !== outputPath)
          await remuxToMp4(encodedPath, outputPath, captions?.tracks ?? []);
        const verified = await verify(
          deps.probe,
          outputPath,
          { spec, size, input, decoded, captions },
          job.output.url,
        );
        const loudnessResult = loudness
          ? { loudness: await reportLoudness(deps, ctx, loudness, { outputPath, workDir }) }
          : {};
        const measured = await reportQuality(deps, ctx, {
          asked: spec.quality,
          outputPath,
          outputUrl: job.output.url,
          durationSeconds: verified.durationSeconds,
          reference: inputReference(input, size),
          workDir,
          percent: 95,
        });
        const result = { ...verified, ...loudnessResult };
        return { result: measured ? { ...result, quality: measured.quality } : result, measured };
      });
      await deliverOutput(deps, job, ctx, outputPath, CONTENT_TYPE[spec.container]);
      await deliverFrames(deps, job, ctx, measured);
      return result;
    });
  };
}

/**
 * The encode (encode-to-rate.ts): progress 5 → 95 split between the two passes by their share of
 * the CPU time; a retry of the final pass holds at 95. Resolves with what the pass that wrote
 * the output decoded.
 */
async function encode(deps: TranscoderDeps, ctx: JobContext, o: TranscodeOptions): Promise<number> {
  const analysed = 5 + 90 * firstPassShare(o.spec.encoder);
  const spans = { analyse: [5, analysed], encode: [analysed, 95], retry: [95, 95] } as const;
  const expectedSeconds = o.input.info.durationSeconds;
  const outcome = await encodeToRate(o, {
    run: (args, step) => {
      const [from, to] = spans[step];
      const pass = step === 'analyse' ? 'analyse' : 'encode';
      return runEncode(deps, ctx, args, { from, to, expectedSeconds }, pass);
    },
    videoKbps: (path) => deps.videoRate(path),
  });
  if (outcome.retry)
    ctx.log.info('transcode.rate_retry', {
      requestedKbps: Number(o.spec.bitrateKbps),
      firstKbps: Math.round(outcome.retry.firstKbps * 10) / 10,
      targetKbps: outcome.retry.targetKbps,
    });
  return outcome.decoded;
}

/**
 * The output against what was asked, its length against what ffmpeg decoded from the input (a
 * header's length can be wrong: timestamps that restart, no length at all).
 */
async function verify(
  probe: Prober,
  path: string,
  o: {
    spec: TranscodeSpec;
    size: OutputSize;
    input: JobInput;
    decoded: number;
    captions: TranscodeCaptions | undefined;
  },
  outputUrl: string,
): Promise<JobResult> {
  const expectedSeconds = o.decoded || o.input.info.durationSeconds;
  const out = await verifyOutput(probe, path, {
    format: o.spec.container,
    videoCodec: VIDEO_CODEC[o.spec.encoder],
    ...o.size,
    durationSeconds: expectedSeconds,
    toleranceSeconds: Math.max(0.5, expectedSeconds * 0.05),
    ...(o.input.info.audio ? {} : { audio: false }),
  });
  const { size: sizeBytes } = await stat(path);
  return {
    outputUrl,
    format: o.spec.container,
    videoCodec: VIDEO_CODEC[o.spec.encoder],
    width: o.size.width,
    height: o.size.height,
    durationSeconds: Math.round(out.durationSeconds * 1000) / 1000,
    sizeBytes,
    ...(out.bitRate ? { bitrateKbps: Math.round(out.bitRate / 100) / 10 } : {}),
    input: describeInput(o.input),
    output: describeOutput(out),
    ...(o.captions ? { captions: captionsReport(o.captions, o.spec, out) } : {}),
  };
}
