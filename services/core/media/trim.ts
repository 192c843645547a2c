import type { TrimOption } from '../contracts/types.generated.ts';
import { MediaError } from '../errors.ts';
import type { JobInput } from './read-input.ts';
import { inputArgs } from './run-ffmpeg.ts';

/** The part of an input a job uses, resolved against its length: seconds from its first frame. */
export interface InputTrim {
  startSeconds: number;
  durationSeconds: number;
  /** The whole input's length, seconds. */
  inputSeconds: number;
}

/**
 * The input as a job that asked for a part of it sees it: its length (and its streams') the
 * part's, read through `jobInputArgs`. The same input without a trim.
 */
export function trimmedInput(input: JobInput, trim: TrimOption | undefined): JobInput {
  const resolved = resolveTrim(trim, input.info.durationSeconds, input.video.frameRate);
  if (!resolved) return input;
  const seconds = resolved.durationSeconds;
  const { video, audio } = input.info;
  const info = {
    ...input.info,
    durationSeconds: seconds,
    video: {
      ...video,
      ...(video.durationSeconds !== undefined ? { durationSeconds: seconds } : {}),
    },
    ...(audio
      ? {
          audio: {
            ...audio,
            ...(audio.durationSeconds !== undefined ? { durationSeconds: seconds } : {}),
          },
        }
      : {}),
  };
  return { ...input, info, video: info.video, trim: resolved };
}

/** ffmpeg's input arguments for a job's input: only its trimmed part, when it has one. */
export function jobInputArgs(input: JobInput): string[] {
  return inputArgs(input.path, trimArgs(input.trim));
}

/**
 * What a trim that ends at or before it starts says (the ingress refuses it with this; a job
 * produced straight to Kafka fails with it).
 */
export function backwardsTrim(trim: TrimOption | undefined): string | undefined {
  if (trim?.endSeconds === undefined) return undefined;
  const start = trim.startSeconds ?? 0;
  return trim.endSeconds > start
    ? undefined
    : `trim.endSeconds (${trim.endSeconds}) must be after trim.startSeconds (${start})`;
}

/**
 * The trim resolved against the input's length: refused (`input_too_short`) when it starts at or
 * past the input's end or ends more than half a frame after it; undefined without a trim.
 */
export function resolveTrim(
  trim: TrimOption | undefined,
  lengthSeconds: number,
  frameRate: number,
): InputTrim | undefined {
  if (!trim) return undefined;
  const backwards = backwardsTrim(trim);
  if (backwards) throw new MediaError('input_too_short', backwards);
  const start = trim.startSeconds ?? 0;
  const end =
    trim.endSeconds ??
    (trim.durationSeconds !== undefined ? start + trim.durationSeconds : lengthSeconds);
  const slack = 0.5 / (frameRate > 0 ? frameRate : 25);
  const length = Math.round(lengthSeconds * 1000) / 1000;
  if (start >= lengthSeconds || end > lengthSeconds + slack)
    throw new MediaError(
      'input_too_short',
      `the trim (${start} s to ${round3(end)} s) lies outside the input, which is ${length} s long`,
    );
  return {
    startSeconds: start,
    durationSeconds: round3(Math.min(end, lengthSeconds) - start),
    inputSeconds: lengthSeconds,
  };
}

/** ffmpeg input options (before `-i`) that read only the trimmed part, timestamps from zero. */
export function trimArgs(trim: InputTrim | undefined): string[] {
  if (!trim) return [];
  return [
    ...(trim.startSeconds > 0 ? ['-ss', String(trim.startSeconds)] : []),
    '-t',
    String(trim.durationSeconds),
  ];
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000;
