// Issue 27's comparison of the transcoder's rate control with an anchor: the same encoder, two
// passes, the same bitrate, no VBV, a slow-class preset. Shared by test/integration/
// rate-control.test.ts and bench/quality.ts.
import { join } from 'node:path';
import type { TranscodeSpec } from '../../services/core/contracts/types.generated.ts';
import { type TranscodeOptions } from '../../services/transcoder/build-transcode-args.ts';
import { peakBoundBits } from '../../services/transcoder/rate-control.ts';
import { encodeToRate, type EncodeOutcome } from '../../services/transcoder/encode-to-rate.ts';
import { createVideoRateReader } from '../../services/core/media/probe-media.ts';
import {
  childrenCpuOf,
  deliveredKbps,
  maxWindowBits,
  qualityScores,
  runMeasured,
  runQuiet,
  videoPackets,
  type QualityScores,
} from './encode-measures.ts';
import { pictureFilters } from '../../services/core/media/picture-filters.ts';
import { readTestInput } from './job-input.ts';
import { anchorKey, cachedFigures } from './anchor-cache.ts';

export type Encoder = TranscodeSpec['encoder'];
export const ENCODERS: readonly Encoder[] = ['h264', 'h265', 'vp8', 'vp9'];

/** What one encode of a clip is to be: where its source is, its size, the encoder and rate. */
export interface EncodeCase {
  clipPath: string;
  width: number;
  height: number;
  encoder: Encoder;
  kbps: number;
  /**
   * For a clip whose frames come at a variable rate: its real average rate and its nominal one
   * (rationals, e.g. `5580/239` and `60/1`). A WebM keeps the frames' own times, and the anchor
   * is then given the same frames at the average rate, constant, so that libvpx budgets the
   * clip's real length; it is measured against the clip retimed alike (anchorPicture). An MP4 is
   * made a constant rate, the nominal one (build-transcode-args.ts, fpsMode), ours and the
   * anchor's alike (x264 and x265 read the frames' times): both are measured against the clip
   * made so the same way, frame for frame (oursPicture).
   */
  variableRate?: { average: string; nominal: string };
}

export const containerOf = (encoder: Encoder): 'mp4' | 'webm' =>
  encoder === 'h264' || encoder === 'h265' ? 'mp4' : 'webm';

const ANCHOR_CODEC: Record<Encoder, string[]> = {
  h264: ['-c:v', 'libx264', '-preset', 'slow'],
  h265: ['-c:v', 'libx265', '-preset', 'medium'],
  vp8: ['-c:v', 'libvpx', '-deadline', 'good', '-cpu-used', '1'],
  vp9: ['-c:v', 'libvpx-vp9', '-deadline', 'good', '-cpu-used', '2'],
};

/**
 * The picture both sides encode and are measured against: the clip through the transcoder's own
 * picture filters at the clip's size (an untagged SD clip is read as BT.601 and made BT.709, as
 * every output is), so the comparison is of the encoders alone.
 */
export async function casePicture(c: EncodeCase): Promise<string> {
  const input = await readTestInput(c.clipPath);
  return `${pictureFilters(input, { width: c.width, height: c.height }, 'bicubic')},format=yuv420p`;
}

/** The picture the anchor encodes: casePicture's, a variable WebM's retimed to its average rate. */
export function anchorPicture(c: EncodeCase, picture: string): string {
  if (!c.variableRate || containerOf(c.encoder) !== 'webm') return picture;
  return `${picture},setpts=N/(${c.variableRate.average}*TB)`;
}

/**
 * The picture ours is measured against: casePicture's, made a constant rate as ours was where it
 * is an MP4. ffmpeg 5.1's `cfr` mode fills the ticks between two frames with the earlier one but
 * for the last, which shows the later one a tick before its time: so the clip goes a tick early,
 * then `fps` repeats each frame until the next (no frame of 239 paired with a neighbour, where
 * `fps` alone paired 92 on the 60 fps phone clip).
 */
export function oursPicture(c: EncodeCase, picture: string): string {
  if (!c.variableRate || containerOf(c.encoder) !== 'mp4') return picture;
  const { nominal } = c.variableRate;
  return `${picture},setpts=PTS-1/(${nominal}*TB),fps=${nominal}:start_time=0`;
}

/**
 * The anchor's ffmpeg runs: first pass to null, second pass to `output`; 2 threads, no audio;
 * `picture` the filters of casePicture.
 */
export function anchorPasses(
  c: EncodeCase,
  output: string,
  passLogPrefix: string,
  picture: string,
): string[][] {
  const pass = (n: 1 | 2): string[] => [
    ...['-i', c.clipPath, '-an', '-vf', picture, ...ANCHOR_CODEC[c.encoder], '-b:v', `${c.kbps}k`],
    // The first pass's null muxer would keep a variable clip's times: the frame counts would
    // differ, as the transcoder's own passes would without their frame-rate mode.
    ...(c.variableRate
      ? containerOf(c.encoder) === 'webm'
        ? ['-r', c.variableRate.average]
        : ['-fps_mode', 'cfr']
      : []),
    // ffmpeg 5.1's -pass does not reach libx265: x265 takes its pass through its own params.
    ...(c.encoder === 'h265'
      ? ['-x265-params', `log-level=error:pass=${n}:stats=${passLogPrefix}-x265.log`]
      : ['-pass', String(n), '-passlogfile', passLogPrefix]),
    ...['-threads', '2'],
  ];
  return [
    [...pass(1), '-f', 'null', '-'],
    [...pass(2), '-f', containerOf(c.encoder), '-y', output],
  ];
}

/**
 * The transcoder's own options for the case (as a job builds them) at the clip's size. The clip
 * has no audio, so its runs are video only like the anchor's. The rate is not checked against
 * the contract's 1000/2000/4000: the rate control is a function of the number, and small test
 * clips need lower rates to stay below their ceiling.
 */
export async function serviceOptions(
  c: EncodeCase,
  output: string,
  passLogPrefix: string,
): Promise<TranscodeOptions> {
  const spec = {
    encoder: c.encoder,
    container: containerOf(c.encoder),
    bitrateKbps: String(c.kbps) as TranscodeSpec['bitrateKbps'],
  };
  return {
    spec,
    input: await readTestInput(c.clipPath),
    outputPath: output,
    size: { width: c.width, height: c.height },
    threads: 2,
    passLogPrefix,
  };
}

/** What one encode delivered. */
export interface EncodeMeasure {
  kbps: number;
  /** Most bits in any 1 s and any 2 s window. */
  peak1sBits: number;
  peak2sBits: number;
  quality: QualityScores;
  /** user + system seconds of its ffmpeg (and ffprobe) runs. */
  cpuSeconds: number;
  /** The service's encode ran its final pass again after an overshoot (encodeToRate). */
  retried?: EncodeOutcome['retry'];
  /** Digest of the video packets' data (encode-measures.ts, videoPackets); absent in older figures. */
  videoDigest?: string;
}

/** Tools and the scratch dir (its own per encode) an encode is measured with. */
export interface MeasureTools {
  ffmpeg: string;
  vmafFfmpeg: string;
}

/** Measures what `output` holds against the clip, `cpuSeconds` being what writing it cost. */
export async function measureOutput(
  tools: MeasureTools,
  c: EncodeCase,
  output: string,
  dir: string,
  picture: string,
  cpuSeconds: number,
): Promise<EncodeMeasure> {
  const { packets, seconds, digest } = await videoPackets(output);
  return {
    videoDigest: digest,
    kbps: deliveredKbps(packets, seconds),
    peak1sBits: maxWindowBits(packets, 1),
    peak2sBits: maxWindowBits(packets, 2),
    // A variable clip's frames all reach the output, in order (the test checks it): paired so.
    quality: await qualityScores(
      tools.vmafFfmpeg,
      output,
      c.clipPath,
      dir,
      picture,
      c.variableRate ? 'order' : 'time',
    ),
    cpuSeconds,
  };
}

/**
 * The service's encode of the case, as the transcoder runs it (encodeToRate: both passes, and
 * the final pass again after an overshoot, measured with the service's own rate reader), with
 * its CPU time.
 */
export async function serviceEncode(
  tools: MeasureTools,
  options: TranscodeOptions,
): Promise<{ cpuSeconds: number; retried?: EncodeMeasure['retried'] }> {
  let outcome: EncodeOutcome | undefined;
  const cpuSeconds = await childrenCpuOf(async () => {
    outcome = await encodeToRate(options, {
      run: async (args) => {
        await runQuiet(tools.ffmpeg, args);
        return 0;
      },
      videoKbps: readRate,
    });
  });
  return { cpuSeconds, ...(outcome?.retry ? { retried: outcome.retry } : {}) };
}

const readRate = createVideoRateReader(process.env['TEST_FFPROBE'] ?? 'ffprobe', {
  memoryLimitBytes: 2 * 1024 ** 3,
});

/** Both sides of one case: ours, the anchor, and the anchor again at a corrected target. */
export interface Comparison {
  ours: EncodeMeasure;
  anchor: EncodeMeasure;
  /**
   * The anchor run again when it missed the request (anchorRetargetKbps): its target, and what it
   * delivered. It tells a picture at its ceiling (more target, no more bits) from a rate control
   * that falls short, and stands for "the encoder's two-pass encode at the requested bitrate"
   * when it lands nearer the request (referenceOf).
   */
  retarget?: { targetKbps: number; measure: EncodeMeasure };
}

/**
 * Both sides of one case, in one dir: the service's encode, then the anchor's, and when the
 * anchor missed the request, the anchor again at a corrected target. With `reuseAnchor` the
 * anchors' figures come from an earlier run's when everything that makes them is the same
 * (anchor-cache.ts); their CPU time is then that run's, so a caller that compares CPU leaves it
 * off. With `cpuRuns` above 1 each side's encode runs that many times and its CPU time is the
 * least of them (what the work costs with the least of the machine's noise); the output
 * measured is the last run's.
 */
export async function compareWithAnchor(
  tools: MeasureTools,
  c: EncodeCase,
  dir: string,
  { reuseAnchor = false, cpuRuns = 1 }: { reuseAnchor?: boolean; cpuRuns?: number } = {},
): Promise<Comparison> {
  const ext = containerOf(c.encoder);
  const oursOut = join(dir, `ours.${ext}`);
  const picture = await casePicture(c);
  const options = await serviceOptions(c, oursOut, join(dir, 'ours-pass'));
  let encoded = await serviceEncode(tools, options);
  for (let run = 1; run < cpuRuns; run++) {
    const again = await serviceEncode(tools, options);
    encoded = { ...again, cpuSeconds: Math.min(encoded.cpuSeconds, again.cpuSeconds) };
  }
  const ours = {
    ...(await measureOutput(tools, c, oursOut, dir, oursPicture(c, picture), encoded.cpuSeconds)),
    ...(encoded.retried ? { retried: encoded.retried } : {}),
  };
  const anchorAt = async (targetKbps: number): Promise<EncodeMeasure> => {
    const at = { ...c, kbps: targetKbps };
    const retimed = anchorPicture(c, picture);
    const measure = (): Promise<EncodeMeasure> => anchorMeasure(tools, at, dir, retimed, cpuRuns);
    if (!reuseAnchor) return measure();
    const key = await anchorKey({
      binaries: [tools.ffmpeg, tools.vmafFfmpeg],
      inputs: [c.clipPath],
      recipe: {
        ...(c.variableRate ? { pairBy: 'order' } : {}),
        picture: retimed,
        size: [c.width, c.height],
        passes: anchorPasses(at, 'OUTPUT', 'PASSLOG', retimed).map((args) =>
          args.map((a) => (a === c.clipPath ? 'CLIP' : a)),
        ),
      },
    });
    return cachedFigures(key, measure);
  };
  const anchor = await anchorAt(c.kbps);
  const targetKbps = anchorRetargetKbps(c.kbps, anchor.kbps);
  if (targetKbps === undefined) return { ours, anchor };
  return { ours, anchor, retarget: { targetKbps, measure: await anchorAt(targetKbps) } };
}

async function anchorMeasure(
  tools: MeasureTools,
  c: EncodeCase,
  dir: string,
  picture: string,
  cpuRuns: number,
): Promise<EncodeMeasure> {
  const anchorOut = join(dir, `anchor.${containerOf(c.encoder)}`);
  const anchorRuns = anchorPasses(c, anchorOut, join(dir, 'anchor-pass'), picture);
  let anchorCpu = await runMeasured(tools.ffmpeg, anchorRuns);
  for (let run = 1; run < cpuRuns; run++)
    anchorCpu = Math.min(anchorCpu, await runMeasured(tools.ffmpeg, anchorRuns));
  return measureOutput(tools, c, anchorOut, dir, oursPicture(c, picture), anchorCpu);
}

export { peakBoundBits };

/**
 * Issue 27's verdicts on one case; `ceiling` when the picture is at its ceiling (atCeiling),
 * `withinRequest` when ours is within ±5 % of the request (so the bitrate rule did not need the
 * ceiling's exception).
 */
export interface Verdicts {
  ceiling: boolean;
  withinRequest: boolean;
  /**
   * Ours wrote the reference's video bit for bit in as many passes: the same work, so CPU cannot
   * tell them apart.
   */
  sameVideo: boolean;
  bitrate: boolean;
  peaks: boolean;
  vmafMean: boolean;
  vmafP5: boolean;
  cpu: boolean;
}

/** Tolerances of the issue: ±5 % bitrate, VMAF mean −0.5, p5 −2, CPU ratio 1. */
export const RULES = {
  bitrateShare: 0.05,
  /**
   * An anchor (the encoder's own two-pass encode) that ends more than this share under the
   * request is run again at a higher target; see atCeiling.
   */
  ceilingShare: 0.02,
  /**
   * The VMAF mean that the anchor's second run, at a target raised by its whole shortfall, gains
   * at most where the picture is at its ceiling. Measured on moving colour bars at 600 kb/s
   * (anchor short by 4 %, 24 % and 59 %): x265 +0.00 for 3.6 % more bits, VP9 +0.03 for 16 %,
   * VP8 +0.12 for 37 %; on the film-grain clip at 1000 kb/s, VP8 short by 9 %, +0.81 for 13 %.
   */
  ceilingGain: 0.2,
  /**
   * At the ceiling, ours may spend this share more than the anchor: libvpx with the anchor's own
   * settings, through the transcoder's arguments (frame-rate mode, colour tags), delivered 1 %
   * more on moving colour bars (249 against 247 kb/s, the same VMAF).
   */
  ceilingSlack: 0.02,
  vmafMeanDrop: 0.5,
  vmafP5Drop: 2,
  cpuRatio: 1,
};

/**
 * The target of the anchor's second run when its first missed the request: more than
 * RULES.bitrateShare over it, or more than RULES.ceilingShare under; scaled by how far it
 * missed, as the transcoder's own retry (rate-control.ts, correctedTargetKbps).
 */
export function anchorRetargetKbps(kbps: number, anchorKbps: number): number | undefined {
  const over = anchorKbps > kbps * (1 + RULES.bitrateShare);
  const short = anchorKbps < kbps * (1 - RULES.ceilingShare);
  if (!over && !short) return undefined;
  return Math.max(1, Math.round((kbps * kbps) / anchorKbps));
}

/** What the ceiling's test reads of an encode: its rate and its picture. */
export interface Rated {
  kbps: number;
  quality: Pick<QualityScores, 'vmafMean'>;
}

/**
 * Whether the anchor's shortfall is the picture's ceiling: it ended more than
 * RULES.ceilingShare under the request and, run again at a target raised by its whole shortfall,
 * gained less than RULES.ceilingGain of VMAF mean, whatever it spent: more bits buy no picture
 * there. A rate control that merely falls short buys picture with them (VP8's two passes on the
 * film-grain clip: 911 kb/s for 1000, VMAF 79.91; at 1098, 1031 kb/s and 80.72). Without a second
 * run the shortfall alone decides.
 */
export function atCeiling(kbps: number, anchor: Rated, again?: Rated): boolean {
  if (!(anchor.kbps < kbps * (1 - RULES.ceilingShare))) return false;
  return (
    again === undefined || again.quality.vmafMean - anchor.quality.vmafMean < RULES.ceilingGain
  );
}

/**
 * The bitrate rule alone, for any encode with a target (a transcode, a ladder rung): within ±5 %
 * of it, or, at the picture's ceiling (atCeiling), no more than the anchor with
 * RULES.ceilingSlack.
 */
export function bitrateVerdict(
  kbps: number,
  oursKbps: number,
  anchor: Rated,
  again?: Rated,
): Pick<Verdicts, 'ceiling' | 'withinRequest' | 'bitrate'> {
  const ceiling = atCeiling(kbps, anchor, again);
  const withinRequest = Math.abs(oursKbps - kbps) <= kbps * RULES.bitrateShare;
  return {
    ceiling,
    withinRequest,
    bitrate: withinRequest || (ceiling && oursKbps <= anchor.kbps * (1 + RULES.ceilingSlack)),
  };
}

/**
 * The two-pass encode ours is judged against for picture and CPU: the anchor, or its second run
 * when the first missed the request, the picture is not at its ceiling, and the second landed
 * nearer the request (the encoder's own two passes at the bitrate asked for: VP8's on the
 * film-grain clip at 2000 kb/s delivered 2236, 11.8 % more bits than ours for 0.55 more VMAF).
 */
export function referenceOf<M extends Rated>(kbps: number, anchor: M, again?: M): M {
  if (!again || atCeiling(kbps, anchor, again)) return anchor;
  const miss = (m: M): number => Math.abs(m.kbps - kbps);
  return miss(again) < miss(anchor) ? again : anchor;
}

export function verdicts(encoder: Encoder, kbps: number, comparison: Comparison): Verdicts {
  const { ours, anchor, retarget } = comparison;
  const { ceiling, withinRequest, bitrate } = bitrateVerdict(
    kbps,
    ours.kbps,
    anchor,
    retarget?.measure,
  );
  const reference = referenceOf(kbps, anchor, retarget?.measure);
  // Not after a retry: ours then ran one more final pass than the reference to get there.
  const sameVideo =
    !ours.retried && ours.videoDigest !== undefined && ours.videoDigest === reference.videoDigest;
  return {
    ceiling,
    withinRequest,
    sameVideo,
    bitrate,
    peaks:
      ours.peak1sBits <= peakBoundBits(encoder, kbps, 1) &&
      ours.peak2sBits <= peakBoundBits(encoder, kbps, 2),
    vmafMean: ours.quality.vmafMean >= reference.quality.vmafMean - RULES.vmafMeanDrop,
    vmafP5: ours.quality.vmafP5 >= reference.quality.vmafP5 - RULES.vmafP5Drop,
    // The same video bit for bit is the same encoder work (the transcoder runs the anchor's own
    // settings for VP8, VP9 and here and there x265): their CPU times differ by the machine's
    // noise alone (0.86–1.11 on the fast-motion clip), which is no verdict on the encode.
    cpu: sameVideo || ours.cpuSeconds <= reference.cpuSeconds * RULES.cpuRatio,
  };
}

/** The libvmaf ffmpeg of the test services; unset, a suite that needs it fails saying how to get it. */
export function testVmafFfmpeg(): string {
  const path = process.env['TEST_VMAF_FFMPEG'];
  if (!path)
    throw new Error(
      'TEST_VMAF_FFMPEG is not set: run through `npm test`, or source the env file of ' +
        '`bash scripts/test-services/start-all.sh FILE` (vmaf.sh installs the libvmaf ffmpeg).',
    );
  return path;
}
