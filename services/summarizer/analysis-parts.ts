/** Analysis samples per second of input. */
export const SAMPLES_PER_SECOND = 2;
/** Sample rate of the mono audio the loudness is measured on, in Hz: energy needs no more. */
export const AUDIO_RATE = 4000;
/** Seconds a later stretch is read before its start: one sample, dropped. */
export const LEAD = 1 / SAMPLES_PER_SECOND;
/** Inputs at least this long per thread are analysed in stretches side by side, in seconds. */
export const MIN_PART_SECONDS = 60;
const MAX_PARTS = 4;

/** A stretch of the input analysed by one ffmpeg; the last one runs to the end. */
export interface AnalysisPart {
  startSeconds: number;
  /** Length in seconds, a whole number of samples; unset for the last part. */
  seconds?: number;
}

/**
 * H.264 without B-frames decodes one frame after the other, so one decoder keeps one core busy
 * however many threads it has: a long input is cut into one stretch per thread instead.
 */
export function analysisParts(durationSeconds: number, threads: number): AnalysisPart[] {
  const count = Math.max(
    1,
    Math.min(MAX_PARTS, threads, Math.floor(durationSeconds / MIN_PART_SECONDS)),
  );
  const length = Math.ceil((durationSeconds / count) * SAMPLES_PER_SECOND) / SAMPLES_PER_SECOND;
  return Array.from({ length: count }, (_, k) => ({
    startSeconds: k * length,
    ...(k < count - 1 ? { seconds: length } : {}),
  }));
}
