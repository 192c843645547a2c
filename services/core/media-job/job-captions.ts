import type { CaptionsOption } from '../contracts/types.generated.ts';
import {
  prepareCaptions,
  textSubtitleStreams,
  type CaptionDeps,
  type CaptionJob,
  type CaptionTrack,
} from '../media/captions.ts';
import type { JobInput } from '../media/read-input.ts';
import type { JobContext } from '../worker/job-handler.ts';
import type { MediaJobDeps } from './media-job.ts';

/** A job's caption tracks, with what made them (a burn-in extracts from the same). */
export interface JobCaptions {
  deps: CaptionDeps;
  job: CaptionJob;
  tracks: CaptionTrack[];
}

/**
 * The caption tracks of a transcode or a stream (captions.ts): undefined when the request has no
 * `captions` and the input no text subtitle stream, so such a job runs exactly as before
 * captions existed. Caller files are read under the transfer rate floor, as the input is.
 */
export async function jobCaptions(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: { captions: CaptionsOption | undefined; input: JobInput; workDir: string },
): Promise<JobCaptions | undefined> {
  const { captions, input } = o;
  if (!captions && textSubtitleStreams(input.info).length === 0) return undefined;
  const captionDeps: CaptionDeps = {
    http: deps.httpStore,
    runFfmpeg: deps.runFfmpeg,
    stallTimeoutMs: deps.stallTimeoutMs,
    log: ctx.log,
    rateFloor: deps.rateFloor,
  };
  const job: CaptionJob = {
    captions,
    inputPath: input.path,
    info: input.info,
    workDir: o.workDir,
    trim: input.trim,
    signal: ctx.signal,
  };
  const tracks = await prepareCaptions(captionDeps, job).catch((error: unknown) => {
    // Unasked, the input's tracks are a bonus: one ffmpeg cannot read costs them, not the job.
    if (captions || ctx.signal.aborted) throw error;
    ctx.log.warn('captions.input_tracks_unreadable', { error });
    return undefined;
  });
  return tracks && { deps: captionDeps, job, tracks };
}
