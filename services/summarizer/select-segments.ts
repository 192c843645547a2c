import { meanActivity, seekCost } from './window-measures.ts';

/** What the analysis knows about an input, on a grid of samples. */
export interface Timeline {
  durationSeconds: number;
  /** Seconds between samples; sample `i` is at `i × sampleSeconds`. */
  sampleSeconds: number;
  /** How much happens in the interval that ends at sample `i` (0 = nothing), one per sample. */
  activity: readonly number[];
  /** Samples that open a new scene, ascending, never 0 (see detectCuts). */
  cuts: readonly number[];
  /** Keyframe times in seconds, ascending, where known: seeking to one costs no extra decoding. */
  keyframes?: readonly number[];
}

/** A stretch of the input that goes into the summary. */
export interface SummarySegment {
  startSeconds: number;
  endSeconds: number;
  durationSeconds: number;
  /** Mean activity of the stretch (motion, and loudness where there is audio); higher is busier. */
  score: number;
  /** Which scene of the input (0-based, in order) the stretch lies in. */
  sceneIndex: number;
}

export interface SelectionOptions {
  /** Longest summary, in seconds (see summaryTargetSeconds). */
  targetSeconds: number;
  /** Shortest segment, in seconds: shorter ones flicker. Default 1. */
  minSegmentSeconds?: number;
  /** Longest segment, in seconds, so one scene does not fill the summary. Default 4. */
  maxSegmentSeconds?: number;
  /** Length a long scene is given per clip when it gets several, in seconds. Default 2. */
  nominalSegmentSeconds?: number;
}

/** Shortest summary target, in seconds; inputs up to this long are used whole. */
export const MIN_TARGET_SECONDS = 6;
/** Longest summary, in seconds, whatever the input length. */
export const MAX_TARGET_SECONDS = 30;
/** Share of the input's length a summary aims at, between the two bounds. */
export const TARGET_SHARE = 0.25;

/** A quarter of the input, at least 6 s and at most 30 s. */
export function summaryTargetSeconds(durationSeconds: number): number {
  return Math.min(MAX_TARGET_SECONDS, Math.max(MIN_TARGET_SECONDS, durationSeconds * TARGET_SHARE));
}

interface Scene {
  index: number;
  /** Where its frames certainly are, in seconds. */
  start: number;
  end: number;
  /** Its samples, [first, last). */
  first: number;
  last: number;
}

/** Clip lengths grow in steps of this many seconds (one analysis sample at 2 samples/s). */
const STEP = 0.5;
/** Clip starts are tried on this grid, in seconds. */
const GRID = 0.25;
const EPSILON = 1e-9;
/**
 * "Close to the best placement", when keyframes are known: a window whose activity is at most
 * this share below the busiest window's, or at most STILL_SLACK below it, counts as busy too, and
 * of those the cheapest to seek to wins. A burst of motion then loses at most a tenth of itself
 * to a cheap seek.
 */
const BUSY_SLACK = 0.1;
/**
 * Activity differences below this (a mean luma change of 0.5 % per half second, about 1.3 of
 * 255 levels: compression noise in a still picture) tell nothing a viewer could see, so in a
 * still scene every window is close to the best. The quality suite's bursts of motion (a box
 * crossing a still scene) raise the activity by 0.05–0.07, ten times this. On the benchmark's
 * 10-minute input this took the render's decoding before the clips' starts from 74 s to 28 s.
 */
const STILL_SLACK = 0.005;
/**
 * The analysis skips B-frames, so the sample before a cut may show a frame up to a run of
 * B-frames (3 with x264's defaults, 0.12 s at 25 fps) older than its time: a scene's last sure
 * moment is this much before that sample.
 */
const END_GUARD = 0.2;

/**
 * Picks the summary: a pure function of the timeline. An input no longer than the target is used
 * whole (one segment per scene, back to back). Otherwise every scene long enough for one segment
 * gets one, longest scenes first when the target cannot hold them all; long scenes get one per
 * share of the input; the time left lengthens the segments with the most room; each segment sits
 * on the most active stretch of its scene (or share of one), never across a cut. Temporal order.
 */
export function selectSegments(timeline: Timeline, options: SelectionOptions): SummarySegment[] {
  const min = options.minSegmentSeconds ?? 1;
  const max = options.maxSegmentSeconds ?? 4;
  const nominal = options.nominalSegmentSeconds ?? 2;
  const scenes = scenesOf(timeline);
  const activity = settledActivity(timeline, scenes);
  if (timeline.durationSeconds <= options.targetSeconds + EPSILON)
    return wholeInput(timeline, scenes, activity);
  let eligible = scenes.filter((s) => s.end - s.start >= min - EPSILON);
  // Nothing but flicker: the cuts mean nothing to a viewer, so the input is one scene.
  if (eligible.length === 0)
    eligible = [
      { index: 0, start: 0, end: timeline.durationSeconds, first: 0, last: activity.length },
    ];
  const slots = Math.max(1, Math.floor((options.targetSeconds + EPSILON) / min));
  const units = unitsOf(
    chooseScenes(eligible, slots, activity, timeline),
    slots,
    timeline.durationSeconds / Math.max(1, Math.floor(options.targetSeconds / nominal)),
    min,
  );
  const lengths = allotLengths(units, options.targetSeconds, min, max);
  const keyframes = timeline.keyframes ?? [];
  return units.map((unit, i) =>
    place(unit, lengths[i] ?? min, activity, timeline.sampleSeconds, keyframes),
  );
}

function scenesOf(timeline: Timeline): Scene[] {
  const n = timeline.activity.length;
  const bounds = [0, ...timeline.cuts.filter((c) => c > 0 && c < n), n];
  const scenes: Scene[] = [];
  for (let k = 0; k + 1 < bounds.length; k++) {
    const first = bounds[k] ?? 0;
    const last = bounds[k + 1] ?? n;
    // A sample shows the last frame at or before its time: the one that opens a scene shows it,
    // the one before the next cut still shows this scene.
    const start = first === 0 ? 0 : first * timeline.sampleSeconds;
    // The container's duration may count audio that outlasts the video; the samples do not.
    const end =
      last >= n
        ? Math.min(timeline.durationSeconds, n * timeline.sampleSeconds)
        : Math.min(timeline.durationSeconds, (last - 1) * timeline.sampleSeconds - END_GUARD);
    scenes.push({ index: k, start, end: Math.max(start, end), first, last });
  }
  return scenes.length
    ? scenes
    : [{ index: 0, start: 0, end: timeline.durationSeconds, first: 0, last: n }];
}

/** A scene's first sample measures the cut, not the scene: it takes its successor's activity. */
function settledActivity(timeline: Timeline, scenes: readonly Scene[]): number[] {
  const activity = [...timeline.activity];
  for (const scene of scenes)
    activity[scene.first] =
      scene.first + 1 < scene.last ? (timeline.activity[scene.first + 1] ?? 0) : 0;
  return activity;
}

function wholeInput(
  timeline: Timeline,
  scenes: readonly Scene[],
  activity: readonly number[],
): SummarySegment[] {
  return scenes.map((scene, k) => {
    const start = scene.start;
    const end = scenes[k + 1]?.start ?? timeline.durationSeconds;
    return segment(
      start,
      end,
      meanActivity(activity, start, end, timeline.sampleSeconds),
      scene.index,
    );
  });
}

/** When the target cannot hold one segment per scene: the longest scenes, then the busiest, then the earliest. */
function chooseScenes(
  eligible: readonly Scene[],
  slots: number,
  activity: readonly number[],
  timeline: Timeline,
): Scene[] {
  if (eligible.length <= slots) return [...eligible];
  const busy = (s: Scene): number => meanActivity(activity, s.start, s.end, timeline.sampleSeconds);
  const ranked = [...eligible].sort(
    (a, b) => b.end - b.start - (a.end - a.start) || busy(b) - busy(a) || a.index - b.index,
  );
  return ranked.slice(0, slots).sort((a, b) => a.index - b.index);
}

interface Unit {
  scene: Scene;
  start: number;
  end: number;
}

/** A scene many shares long gets a segment per share, as long as the slots allow. */
function unitsOf(scenes: readonly Scene[], slots: number, share: number, min: number): Unit[] {
  const counts = scenes.map((s) =>
    Math.max(
      1,
      Math.min(
        Math.round((s.end - s.start) / share),
        Math.floor((s.end - s.start + EPSILON) / min),
      ),
    ),
  );
  let total = counts.reduce((a, b) => a + b, 0);
  while (total > slots) {
    // Take a share back from the scene whose shares are shortest (the latest on a tie).
    let pick = -1;
    for (let k = 0; k < scenes.length; k++) {
      if ((counts[k] ?? 1) <= 1) continue;
      if (pick < 0 || shareOf(scenes[k], counts[k]) <= shareOf(scenes[pick], counts[pick]))
        pick = k;
    }
    if (pick < 0) break;
    counts[pick] = (counts[pick] ?? 2) - 1;
    total--;
  }
  return scenes.flatMap((scene, k) => {
    const count = counts[k] ?? 1;
    const width = (scene.end - scene.start) / count;
    return Array.from({ length: count }, (_, j) => ({
      scene,
      start: scene.start + j * width,
      end: j === count - 1 ? scene.end : scene.start + (j + 1) * width,
    }));
  });
}

const shareOf = (scene: Scene | undefined, count: number | undefined): number =>
  scene ? (scene.end - scene.start) / (count ?? 1) : Infinity;

/**
 * Every unit starts at the minimum; the rest of the target goes a step at a time to the shortest
 * segment that can still grow (the one with the most room on a tie), so lengths stay even.
 */
function allotLengths(units: readonly Unit[], target: number, min: number, max: number): number[] {
  const lengths = units.map((u) => Math.min(min, u.end - u.start));
  let left = target - lengths.reduce((a, b) => a + b, 0);
  while (left >= STEP - EPSILON) {
    let pick = -1;
    for (let i = 0; i < units.length; i++) {
      const room = roomOf(units[i], lengths[i]);
      if (room < STEP - EPSILON || (lengths[i] ?? 0) + STEP > max + EPSILON) continue;
      const shorter = pick < 0 || (lengths[i] ?? 0) < (lengths[pick] ?? 0) - EPSILON;
      const sameButRoomier =
        pick >= 0 &&
        Math.abs((lengths[i] ?? 0) - (lengths[pick] ?? 0)) <= EPSILON &&
        room > roomOf(units[pick], lengths[pick]) + EPSILON;
      if (shorter || sameButRoomier) pick = i;
    }
    if (pick < 0) break;
    lengths[pick] = (lengths[pick] ?? 0) + STEP;
    left -= STEP;
  }
  return lengths;
}

const roomOf = (unit: Unit | undefined, length: number | undefined): number =>
  unit ? unit.end - unit.start - (length ?? 0) : 0;

/**
 * The busiest window of `length` inside the unit. Windows close to its activity (BUSY_SLACK,
 * STILL_SLACK) count as busy too, and of those the one that starts soonest after a keyframe wins
 * (at a keyframe inside the unit when one fits; else the earliest, nearest the one before): the render
 * decodes from the keyframe before each segment, so this is what makes a long input cheap to
 * summarise (x264 puts keyframes up to 10 s apart). Then the one nearest the unit's middle.
 */
function place(
  unit: Unit,
  length: number,
  activity: readonly number[],
  dt: number,
  keyframes: readonly number[],
): SummarySegment {
  const last = Math.max(unit.start, unit.end - length);
  const starts: number[] = [last];
  for (let s = unit.start; s + length <= unit.end + EPSILON; s += GRID) starts.push(s);
  for (const k of keyframes) if (k >= unit.start && k <= last) starts.push(k);
  const scored = starts.map((s) => ({
    s,
    score: meanActivity(activity, s, s + length, dt),
    seek: seekCost(s, keyframes),
  }));
  const busiest = Math.max(...scored.map((c) => c.score));
  const middle = (unit.start + last) / 2;
  const pick = scored
    .filter(
      (c) =>
        c.score >=
        busiest -
          Math.max(EPSILON, keyframes.length ? Math.max(STILL_SLACK, BUSY_SLACK * busiest) : 0),
    )
    .reduce((a, b) => {
      if (Math.abs(a.seek - b.seek) > EPSILON) return b.seek < a.seek ? b : a;
      const da = Math.abs(a.s - middle);
      const db = Math.abs(b.s - middle);
      if (Math.abs(da - db) > EPSILON) return db < da ? b : a;
      return b.s < a.s ? b : a;
    });
  return segment(pick.s, Math.min(unit.end, pick.s + length), pick.score, unit.scene.index);
}

function segment(start: number, end: number, score: number, sceneIndex: number): SummarySegment {
  const startSeconds = round(start);
  const endSeconds = round(end);
  return {
    startSeconds,
    endSeconds,
    durationSeconds: round(endSeconds - startSeconds),
    score: round(Math.max(0, score)),
    sceneIndex,
  };
}

const round = (n: number): number => Math.round(n * 1000) / 1000;
