/** What an H.264 output's level depends on: its size and frame rate. */
export interface LevelPicture {
  width: number;
  height: number;
  /** Frames per second; 0 when unknown. */
  frameRate: number;
  variableFrameRate: boolean;
}

/** The output's VBV: its peak rate and its buffer. */
export interface Vbv {
  maxrateKbps: number;
  bufsizeKbit: number;
}

/**
 * `4.1` where x264 would choose a level of 3.1 to 4.0, undefined where x264's own choice stands.
 * Those levels have a minimum compression ratio of 4 (H.264 Table A-1, MinCR), which x264
 * enforces under VBV as a cap on every frame, a quarter of a raw picture: 338 kB at 720p. A hard
 * cut to a detailed still needs more, so the keyframe came out coarse and the frames after it
 * paid to refine it: on the 15 s slides clip at 2000 kb/s (the transcoder's VBV; x264 chose
 * 3.1), keyframes of 326–394 kB against 366–665 kB without VBV, 1618 kb/s against the anchor's
 * 1517 (no VBV), VMAF 97.28 (5th-percentile frame 97.00) against 97.40 (97.32). Declaring 4.1
 * (MinCR 2): 1483 kb/s, 97.37 (97.28). Level 4.1 is High profile's common ground (every browser
 * and phone that plays 1080p; Apple's HLS authoring rules allow up to 4.2), and the output keeps
 * its limits, which x264 holds. Where the picture fits level 3 the ratio is 2 already; where it
 * does not fit 4.1 (1080p60, larger frames, rates past 4.1's) x264 chooses 4.2 or above, whose
 * ratio is 2 again. A variable frame rate leaves x264 the choice: the rate it will see is not
 * known here.
 */
export function h264Level(picture: LevelPicture, vbv: Vbv): '4.1' | undefined {
  if (picture.variableFrameRate || !(picture.frameRate > 0)) return undefined;
  const fits = (l: H264Level): boolean => fitsH264Level(l, picture, vbv);
  return !fits(LEVEL_3) && fits(LEVEL_4_1) ? '4.1' : undefined;
}

/** `-level:v 4.1` for one output stream, or nothing (see h264Level). */
export function h264LevelArgs(picture: LevelPicture, vbv: Vbv, stream = 'v'): string[] {
  const level = h264Level(picture, vbv);
  return level ? [`-level:${stream}`, level] : [];
}

interface H264Level {
  /** MaxFS, macroblocks per frame. */
  frameSize: number;
  /** MaxMBPS, macroblocks per second. */
  macroblockRate: number;
  /** MaxBR and MaxCPB for Baseline/Main, kbit/s and kbit (High: 1.25×). */
  bitrate: number;
  buffer: number;
}

// H.264 Table A-1.
const LEVEL_3: H264Level = {
  frameSize: 1620,
  macroblockRate: 40500,
  bitrate: 10000,
  buffer: 10000,
};
const LEVEL_4_1: H264Level = {
  frameSize: 8192,
  macroblockRate: 245760,
  bitrate: 50000,
  buffer: 62500,
};
const HIGH_PROFILE_RATE_FACTOR = 1.25;

function fitsH264Level(level: H264Level, picture: LevelPicture, vbv: Vbv): boolean {
  const across = Math.ceil(picture.width / 16);
  const down = Math.ceil(picture.height / 16);
  // x264's own checks: each side within sqrt(8 × MaxFS) macroblocks (the standard's A.3.1).
  const side = Math.sqrt(8 * level.frameSize);
  return (
    across * down <= level.frameSize &&
    across <= side &&
    down <= side &&
    across * down * picture.frameRate <= level.macroblockRate &&
    vbv.maxrateKbps <= level.bitrate * HIGH_PROFILE_RATE_FACTOR &&
    vbv.bufsizeKbit <= level.buffer * HIGH_PROFILE_RATE_FACTOR
  );
}
