import { ffmpegPass } from './media-job.ts';
import type { JobContext } from '../worker/job-handler.ts';
import type { FFMPEG_PASSES, Metrics } from '../observability/metrics.ts';
import type { FfmpegRunner } from '../media/run-ffmpeg.ts';
import { runSideBySide } from '../media/run-side-by-side.ts';

/** The part of a job's progress (percent) one ffmpeg run fills. */
export interface ProgressSpan {
  /** Percent reported when the run starts. */
  from: number;
  /** Percent reported when the run has written `expectedSeconds` of output. */
  to: number;
  /** Seconds of output the run writes. */
  expectedSeconds: number;
}

/**
 * Runs one ffmpeg of a job: its cancel signal, the stall limit, and progress mapped onto the
 * job's percent (each tick also keeps the job's lease alive). Resolves with the seconds of
 * output ffmpeg last reported writing: what it decoded from the input, whatever the input's
 * header said (0 when it reported nothing).
 */
export function runEncode(
  deps: { runFfmpeg: FfmpegRunner; stallTimeoutMs: number; metrics?: Metrics },
  ctx: JobContext,
  args: readonly string[],
  span: ProgressSpan,
  pass: (typeof FFMPEG_PASSES)[number] = 'encode',
): Promise<number> {
  return runEncodes(deps, ctx, [args], span, pass);
}

/**
 * Runs ffmpegs of one step of a job side by side (parts of one output, each writing its share
 * of `span.expectedSeconds`): the first failure stops the others; progress is what they wrote
 * together, and so is the result.
 */
export async function runEncodes(
  deps: { runFfmpeg: FfmpegRunner; stallTimeoutMs: number; metrics?: Metrics },
  ctx: JobContext,
  runs: readonly (readonly string[])[],
  span: ProgressSpan,
  pass: (typeof FFMPEG_PASSES)[number] = 'encode',
): Promise<number> {
  const expected = span.expectedSeconds > 0 ? span.expectedSeconds : 1;
  const written = runs.map(() => 0);
  const total = (): number => written.reduce((a, b) => a + b, 0);
  await ffmpegPass(
    deps,
    ctx,
    pass,
    // What ffmpeg last reported writing; the expected length when it ended before a report.
    () => total() || span.expectedSeconds,
    () =>
      runSideBySide(
        ctx.signal,
        runs.map(
          (args, k) => (signal) =>
            deps.runFfmpeg(args, {
              signal,
              stallTimeoutMs: deps.stallTimeoutMs,
              onProgress: (p) => {
                written[k] = p.outTimeSeconds;
                ctx.progress(
                  span.from + (span.to - span.from) * Math.min(1, total() / expected),
                  'encode',
                );
              },
            }),
        ),
      ),
  );
  return total();
}
