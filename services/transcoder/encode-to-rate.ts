import {
  buildTranscodeArgs,
  correctedTargetKbps,
  retryFinalPass,
  type TranscodeOptions,
} from './build-transcode-args.ts';

/** Which run of a transcode's encode this is: the analysis, the final pass, its retry. */
export type EncodeStep = 'analyse' | 'encode' | 'retry';

/** How a transcode's ffmpeg runs are made and its output measured (the handler's, a bench's). */
export interface EncodeSteps {
  /** Runs one ffmpeg; resolves with the seconds of output it reported writing. */
  run(args: readonly string[], step: EncodeStep): Promise<number>;
  /** The delivered video bitrate of the file the final pass wrote, kb/s. */
  videoKbps(path: string): Promise<number>;
}

/** What the encode did: what the final pass decoded, and its retry if it ran one. */
export interface EncodeOutcome {
  decoded: number;
  retry?: { firstKbps: number; targetKbps: number };
}

/**
 * A transcode's encode: the first pass, the final pass, and when the final pass overshot the
 * request, that pass once more at a corrected target (rate-control.ts, correctedTargetKbps).
 */
export async function encodeToRate(
  options: TranscodeOptions,
  steps: EncodeSteps,
): Promise<EncodeOutcome> {
  const [first, final] = buildTranscodeArgs(options);
  if (!first || !final) throw new Error('a transcode without its two passes');
  await steps.run(first, 'analyse');
  const decoded = await steps.run(final, 'encode');
  const requested = Number(options.spec.bitrateKbps);
  const firstKbps = await steps.videoKbps(options.outputPath);
  const targetKbps = correctedTargetKbps(requested, firstKbps);
  if (targetKbps === undefined) return { decoded };
  return {
    decoded: await steps.run(retryFinalPass(options, targetKbps), 'retry'),
    retry: { firstKbps, targetKbps },
  };
}
