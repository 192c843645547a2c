const EPSILON = 1e-9;

/** Seconds of video decoded before `start` when seeking to it: back to the keyframe before it. */
export function seekCost(start: number, keyframes: readonly number[]): number {
  let before = 0;
  for (const k of keyframes) {
    if (k > start + EPSILON) break;
    before = k;
  }
  return keyframes.length ? start - before : 0;
}

/** Activity of sample i covers (t(i) − dt, t(i)]; the mean over [start, end) weighs each by its overlap. */
export function meanActivity(
  activity: readonly number[],
  start: number,
  end: number,
  dt: number,
): number {
  if (end <= start) return 0;
  let sum = 0;
  const from = Math.max(0, Math.floor(start / dt));
  for (let i = from; i < activity.length && (i - 1) * dt < end; i++) {
    const overlap = Math.min(end, i * dt) - Math.max(start, (i - 1) * dt);
    if (overlap > 0) sum += (activity[i] ?? 0) * overlap;
  }
  return sum / (end - start);
}
