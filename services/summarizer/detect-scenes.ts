import type { FrameChange } from './frame-features.ts';

/** Tuning of the cut detector; the defaults were set on generated videos (see the quality suite). */
export interface CutOptions {
  /** A cut needs at least this much colour + motion change between two samples (0 to 2). Default 0.5. */
  minChange: number;
  /** …and this many times the median change of the samples around it. Default 3. */
  medianFactor: number;
  /** Samples on each side that make up "around it". Default 6 (3 s at 2 samples/s). */
  window: number;
}

export const DEFAULT_CUT_OPTIONS: CutOptions = { minChange: 0.5, medianFactor: 3, window: 6 };

const changeOf = (c: FrameChange): number => c.colour + c.motion;

/**
 * Indices of the samples that open a new scene (never 0). A cut is a colour-histogram jump
 * together with a motion spike, measured against the median of the samples around it (its direct
 * neighbours left out, so a two-sample transition does not raise its own bar): a busy scene does
 * not cut itself to pieces while a still one still notices a change. Neighbouring samples that
 * both pass are one cut, placed at the first: the new scene is already on screen there.
 */
export function detectCuts(
  changes: readonly FrameChange[],
  options: CutOptions = DEFAULT_CUT_OPTIONS,
): number[] {
  const score = changes.map(changeOf);
  const cuts: number[] = [];
  let previousPassed = false;
  for (let i = 1; i < score.length; i++) {
    const s = score[i] ?? 0;
    const around = [
      ...score.slice(Math.max(1, i - options.window), Math.max(1, i - 1)),
      ...score.slice(i + 2, i + 2 + options.window),
    ];
    const passed = s >= options.minChange && s >= options.medianFactor * median(around);
    if (passed && !previousPassed) cuts.push(i);
    previousPassed = passed;
  }
  return cuts;
}

function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}
