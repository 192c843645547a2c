/** A stretch of the input that goes into the summary. */
export interface Segment {
  startSeconds: number;
  durationSeconds: number;
}

/** Longest summary produced, in seconds of output. */
export const MAX_SUMMARY_SECONDS = 12;

/**
 * Evenly spread clips, in temporal order, deterministic for a given duration: up to six clips
 * of up to two seconds, each centred in its share of the input. Inputs shorter than the
 * summary are used whole.
 */
export function planSegments(durationSeconds: number): Segment[] {
  if (durationSeconds <= 0) return [];
  if (durationSeconds <= MAX_SUMMARY_SECONDS / 2) return [{ startSeconds: 0, durationSeconds: round(durationSeconds) }];
  const count = Math.min(6, Math.max(2, Math.floor(durationSeconds / 10)));
  const clip = Math.min(2, durationSeconds / (count * 2));
  const share = durationSeconds / count;
  return Array.from({ length: count }, (_, i) => ({
    startSeconds: round(i * share + (share - clip) / 2),
    durationSeconds: round(clip),
  }));
}

const round = (n: number): number => Math.round(n * 1000) / 1000;
