/**
 * The bitrate ladder of a stream job: the renditions a player switches between. Built on the
 * input model (displayed size after rotation and pixel aspect, frame rate), never on stored
 * sizes: a portrait phone video stored 1920×1080 with a 90° matrix gets portrait rungs.
 */
import { MediaError } from '../core/errors.ts';
import type { VideoInfo } from '../core/media/media-info.ts';
import { even } from '../core/media/output-size.ts';

/** Video encoders a ladder may use (all in CMAF fMP4). */
export type LadderEncoder = 'h264' | 'h265' | 'vp9';

/** One rendition of the ladder. */
export interface Rung {
  /** `<short side>p`, e.g. `720p` (a portrait 720×1280 rung is `720p` too). */
  name: string;
  width: number;
  height: number;
  /** Target average bitrate of the video, kb/s. */
  bitrateKbps: number;
  /** VBV peak rate, kb/s: what a rung may reach over a buffer's length. */
  maxrateKbps: number;
  /** VBV buffer, kb: one second at the peak rate. */
  bufsizeKbps: number;
}

/** A rung the caller asks for: the picture's height (width follows the displayed aspect). */
export interface RequestedRung {
  height: number;
  bitrateKbps: number;
}

/**
 * H.264 video kb/s by short side, for a 16:9 picture at up to 30 frames/s (the HLS authoring
 * spec's and the hosted services' ladders lie around these figures).
 */
export const DEFAULT_LADDER_TABLE: readonly { shortSide: number; kbps: number }[] = [
  { shortSide: 2160, kbps: 14000 },
  { shortSide: 1440, kbps: 8000 },
  { shortSide: 1080, kbps: 5000 },
  { shortSide: 720, kbps: 2800 },
  { shortSide: 480, kbps: 1400 },
  { shortSide: 360, kbps: 800 },
  { shortSide: 240, kbps: 400 },
];

/** At most this many rungs by default: the top ones of the table under the input. */
export const DEFAULT_MAX_RUNGS = 5;
/** HEVC and VP9 reach H.264's quality with about this share of its bitrate. */
const ENCODER_FACTOR: Record<LadderEncoder, number> = { h264: 1, h265: 0.7, vp9: 0.7 };
/** The share of H.264's bitrate `encoder` needs for the same quality (see ENCODER_FACTOR). */
export function encoderFactor(encoder: LadderEncoder): number {
  return ENCODER_FACTOR[encoder];
}
/** VBV: peak at this multiple of the average, buffer of one second at the peak. */
const PEAK_FACTOR = 1.2;

/**
 * Frame-rate factor of the table's bitrates: 1 up to 30 frames/s, rising linearly to 1.5 at 60
 * (twice the frames cost about half as much again: motion between them is smaller).
 */
export function frameRateFactor(frameRate: number): number {
  if (!(frameRate > 30)) return 1;
  return 1 + (0.5 * (Math.min(frameRate, 60) - 30)) / 30;
}

/**
 * The default ladder: the table's short sides at or below the input's displayed short side
 * (never above the input), plus the input's own size on top when it lies more than 10 % above
 * the largest of them (or below all of them), at most DEFAULT_MAX_RUNGS, largest first.
 */
export function defaultLadder(video: VideoInfo, encoder: LadderEncoder = 'h264'): Rung[] {
  const { width, height } = video.display;
  const shortSide = Math.min(width, height);
  const sides = DEFAULT_LADDER_TABLE.map((r) => r.shortSide).filter((s) => s <= shortSide);
  const largest = sides[0];
  const own = even(shortSide);
  if (largest === undefined || (own > largest * 1.1 && own <= 2160)) sides.unshift(own);
  return sides
    .slice(0, DEFAULT_MAX_RUNGS)
    .map((side) => rungOf(video, side, tableKbps(side), encoder, true));
}

/**
 * The caller's rungs, checked against the input: each height at most the displayed height (no
 * upscaling), no height twice, a taller rung never with fewer kb/s than a shorter one. Sorted
 * largest first.
 */
export function requestedLadder(video: VideoInfo, rungs: readonly RequestedRung[]): Rung[] {
  const sorted = [...rungs].sort((a, b) => b.height - a.height);
  const { height } = video.display;
  sorted.forEach((rung, k) => {
    if (rung.height > height)
      throw new MediaError(
        'invalid_request',
        `ladder: a rung of height ${rung.height} is taller than the input as shown (${height}); rungs are never upscaled`,
      );
    const next = sorted[k + 1];
    if (next && next.height === rung.height)
      throw new MediaError('invalid_request', `ladder: height ${rung.height} is given twice`);
    if (next && next.bitrateKbps > rung.bitrateKbps)
      throw new MediaError(
        'invalid_request',
        `ladder: the ${next.height} rung has more kb/s (${next.bitrateKbps}) than the taller ${rung.height} rung (${rung.bitrateKbps})`,
      );
  });
  return sorted.map((r) => {
    const w = even((video.display.width * r.height) / height);
    const side = Math.min(w, even(r.height));
    return rungOf(video, side, r.bitrateKbps, 'h264', false, even(r.height));
  });
}

/** kb/s of the table at a short side: its entry, or linear between the nearest two. */
function tableKbps(side: number): number {
  const table = DEFAULT_LADDER_TABLE;
  const exact = table.find((r) => r.shortSide === side);
  if (exact) return exact.kbps;
  const above = [...table].reverse().find((r) => r.shortSide > side);
  const below = table.find((r) => r.shortSide < side);
  if (!above && below) return (below.kbps * side) / below.shortSide;
  if (above && !below) return (above.kbps * side) / above.shortSide;
  if (!above || !below) return 400;
  const t = (side - below.shortSide) / (above.shortSide - below.shortSide);
  return below.kbps + t * (above.kbps - below.kbps);
}

/**
 * A rung of short side `side` at the input's displayed aspect. Default rungs scale the table's
 * rate by frame rate, encoder and area (a 4:3 picture has 3/4 of a 16:9 one's pixels at the
 * same short side; never below half); a caller's rate is taken as given.
 */
function rungOf(
  video: VideoInfo,
  side: number,
  kbps: number,
  encoder: LadderEncoder,
  scale: boolean,
  pictureHeight?: number,
): Rung {
  const { width: dw, height: dh } = video.display;
  const portrait = dh > dw;
  let width: number;
  let height: number;
  if (pictureHeight !== undefined) {
    height = pictureHeight;
    width = even((dw * height) / dh);
  } else if (portrait) {
    width = even(side);
    height = even((dh * side) / dw);
  } else {
    height = even(side);
    width = even((dw * side) / dh);
  }
  const area = Math.max(0.5, Math.min(1, (width * height) / (even((side * 16) / 9) * side)));
  const rate = scale
    ? Math.round(kbps * frameRateFactor(video.frameRate) * ENCODER_FACTOR[encoder] * area)
    : kbps;
  const maxrate = Math.round(rate * PEAK_FACTOR);
  return {
    name: `${Math.min(width, height)}p`,
    width,
    height,
    bitrateKbps: rate,
    maxrateKbps: maxrate,
    bufsizeKbps: maxrate,
  };
}
