import type { MediaDescription } from '../contracts/types.generated.ts';
import type { AudioInfo, MediaInfo, VideoInfo } from './media-info.ts';
import type { JobInput } from './read-input.ts';

/**
 * What the service saw in a job's input: the displayed picture, its length (of the remux, when
 * its timeline needed one; the whole input's, when the job used a part), rates, HDR, interlacing
 * and audio channels.
 */
export function describeInput(input: JobInput): MediaDescription {
  return {
    ...picture(input.video),
    durationSeconds: round3(input.trim?.inputSeconds ?? input.info.durationSeconds),
    interlaced: input.deinterlace !== undefined,
    ...audio(input.info.audio),
  };
}

/** The same description of an output, from its probe. */
export function describeOutput(out: MediaInfo & { video: VideoInfo }): MediaDescription {
  return {
    ...picture(out.video),
    durationSeconds: round3(out.durationSeconds),
    interlaced: out.video.fieldOrder === 'tff' || out.video.fieldOrder === 'bff',
    ...audio(out.audio),
  };
}

function picture(
  video: VideoInfo,
): Pick<
  MediaDescription,
  'width' | 'height' | 'rotation' | 'frameRate' | 'variableFrameRate' | 'dynamicRange'
> {
  return {
    width: video.display.width,
    height: video.display.height,
    rotation: video.rotation,
    frameRate: video.frameRate,
    variableFrameRate: video.variableFrameRate,
    dynamicRange: video.dynamicRange,
  };
}

function audio(
  a: AudioInfo | undefined,
): Pick<MediaDescription, 'audioChannels' | 'audioSampleRate'> {
  return {
    audioChannels: a?.channels ?? 0,
    ...(a && a.sampleRate > 0 ? { audioSampleRate: a.sampleRate } : {}),
  };
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000;
