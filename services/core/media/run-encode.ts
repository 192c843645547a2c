import { ffmpegPass } from '../jobs/media-job.ts';
import type { JobContext } from '../jobs/run-job-worker.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { FfmpegRunner } from './run-ffmpeg.ts';

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
 * job's percent (each tick also keeps the job's lease alive).
 */
export function runEncode(
  deps: { runFfmpeg: FfmpegRunner; stallTimeoutMs: number; metrics?: Metrics },
  ctx: JobContext,
  args: readonly string[],
  span: ProgressSpan,
): Promise<void> {
  const expected = span.expectedSeconds > 0 ? span.expectedSeconds : 1;
  let written = 0;
  return ffmpegPass(
    deps,
    ctx,
    'encode',
    // What ffmpeg last reported writing; the expected length when it ended before a report.
    () => written || span.expectedSeconds,
    () =>
      deps.runFfmpeg(args, {
        signal: ctx.signal,
        stallTimeoutMs: deps.stallTimeoutMs,
        onProgress: (p) => {
          written = p.outTimeSeconds;
          ctx.progress(
            span.from + (span.to - span.from) * Math.min(1, p.outTimeSeconds / expected),
            'encode',
          );
        },
      }),
  );
}
