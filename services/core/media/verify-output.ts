import { MediaError } from '../errors.ts';
import type { MediaInfo, Prober } from './probe-media.ts';

/** What a produced file must be; anything else fails the job as `output_invalid`. */
export interface ExpectedOutput {
  /** One of the names in ffprobe's format_name ("mp4", "webm", "gif"). */
  format: string;
  /** ffprobe's codec_name of the video stream ("h264", "hevc", "vp8", "vp9", "gif"). */
  videoCodec: string;
  width: number;
  height: number;
  durationSeconds: number;
  /** Largest accepted difference from durationSeconds, in seconds. */
  toleranceSeconds: number;
  /** false: the file must have no audio stream. Unset: not checked. */
  audio?: boolean;
}

export type VerifiedOutput = MediaInfo & { video: NonNullable<MediaInfo['video']> };

/**
 * Reads the file back with ffprobe and compares it with what was asked. One mapping for every
 * worker: a file ffprobe cannot read is an invalid output, never an unsupported input.
 */
export async function verifyOutput(
  probe: Prober,
  path: string,
  expected: ExpectedOutput,
): Promise<VerifiedOutput> {
  const out = await probe(path).catch((cause: unknown) => {
    throw new MediaError('output_invalid', 'the output could not be read back', { cause });
  });
  const problems: string[] = [];
  if (!out.formatName.split(',').includes(expected.format))
    problems.push(`container ${out.formatName}`);
  if (out.video?.codec !== expected.videoCodec)
    problems.push(`codec ${out.video?.codec ?? 'none'}`);
  const shown = out.video?.display;
  if (shown?.width !== expected.width || shown.height !== expected.height)
    problems.push(`size ${shown?.width}x${shown?.height}`);
  if (out.video && out.video.rotation !== 0) problems.push(`a rotation of ${out.video.rotation}°`);
  if (Math.abs(out.durationSeconds - expected.durationSeconds) > expected.toleranceSeconds)
    problems.push(`duration ${out.durationSeconds}s`);
  if (expected.audio === false && out.audio) problems.push('an audio stream');
  if (problems.length || !out.video)
    throw new MediaError(
      'output_invalid',
      `the output failed verification: ${problems.join(', ')}`,
    );
  return { ...out, video: out.video };
}
