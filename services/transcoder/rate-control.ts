import type { TranscodeSpec } from '../core/contracts/types.generated.ts';
import { h264LevelArgs, type LevelPicture } from '../core/media/h264-level.ts';

/**
 * Peak rate allowed to every encoder, as a multiple of the requested bitrate (`-maxrate`): 2,
 * the peak Apple's HLS authoring rules allow a VOD stream (200 % of its average). With the
 * buffer below, the bits in any window of T seconds stay under
 * `(PEAK_FACTOR × T + BUFFER_SECONDS) × bitrate`: at most 6× the average rate over 1 s and 4×
 * over 2 s, so a player with a 4 s buffer on a link of 2× the bitrate never stalls. A tighter
 * peak starves the hard scenes of mixed content: on the minute of mixed 640x360 scenes
 * (`long-mix`) at 1000 kb/s, where the anchor (no VBV) spends 6.9× the average over 1 s, x264
 * `medium` with a peak of 1.5× scored VMAF 95.46 (5th-percentile frame 82.6) against the
 * anchor's 96.54 (92.3); with 2×, 96.35 (91.3), and x265 96.09 (87.6) and 96.55 (91.9) against
 * its anchor's 96.54 (92.1). x264/x265 enforce it as VBV (hard); VP8 and VP9 cannot (see
 * LIBVPX_BUFFER_SECONDS).
 */
export const PEAK_FACTOR = 2;

/**
 * Decoder buffer, in seconds at the requested bitrate (`-bufsize`). A hard cut to a detailed
 * still needs a keyframe of several seconds' bits: on the 15 s slides clip at 1000 kb/s,
 * x264's anchor (no VBV) spent up to 4.5 s of the rate on one keyframe. With a 2 s buffer x264
 * lost 0.91 VMAF (3.0 on the 5th-percentile frame) to its anchor and x265 0.50 (2.9); with
 * 4 s, 0.24 (0.85) and 0.11 (0.58), at less CPU, and moving pictures (animation, camera at
 * 1000 kb/s) kept their rates and VMAF within 0.05 of the 2 s buffer's (bench:quality).
 */
export const BUFFER_SECONDS = 4;

/**
 * The buffer, in seconds at the requested bitrate, that a player needs for a VP8 or VP9 output
 * on a link of PEAK_FACTOR × the bitrate: a bound measured, not enforced. libvpx's two-pass
 * VBR holds no buffer that bounds peaks (`-bufsize` changed no byte of a VP8 encode, and
 * `-maxrate`, its cap on a section's rate, took VP8's 2 s peak on long-mix from 4.53× to 4.34×
 * only), so VP8 and VP9 run without `-maxrate`/`-bufsize` (with them libvpx spent more than its
 * own two-pass encode on still content, see videoCodecArgs). Measured by bench:quality: on the
 * minute of mixed scenes, VP8 reached 4.80× over 1 s and 4.65× over 2 s at 1000 kb/s (its own
 * anchor 4.76× and 4.60×), VP9 3.40× and 3.11× at most; on the 720p clips of 5–15 s, 2.2× and 2.0× at
 * most (still slides with hard cuts). With 6 s the bound is 8× over 1 s and 5× over 2 s;
 * test/integration/rate-control.test.ts holds it on the short corpus.
 */
export const LIBVPX_BUFFER_SECONDS = 6;

/**
 * The peak bound of a transcode's video: the most bits it may hold in any window of `seconds`
 * at `kbps`, `(PEAK_FACTOR × T + buffer) × bitrate`.
 */
export function peakBoundBits(
  encoder: TranscodeSpec['encoder'],
  kbps: number,
  seconds: number,
): number {
  const buffer = encoder === 'vp8' || encoder === 'vp9' ? LIBVPX_BUFFER_SECONDS : BUFFER_SECONDS;
  return (PEAK_FACTOR * seconds + buffer) * kbps * 1000;
}

/** Fraction of a transcode's CPU time its first pass takes, per encoder. */
export function firstPassShare(encoder: TranscodeSpec['encoder']): number {
  return FIRST_PASS_SHARE[encoder];
}

// user+sys of pass 1 / both passes with the settings below (bbb 720p, bikes 640x272).
const FIRST_PASS_SHARE: Record<TranscodeSpec['encoder'], number> = {
  h264: 0.33,
  h265: 0.5,
  vp8: 0.15,
  vp9: 0.06,
};

/**
 * The rate-control and encoder arguments shared by both passes. Every encoder runs two passes:
 * one pass missed the request by up to 20 % on natural content (x264 medium 788 kb/s and VP9
 * CBR 1186 kb/s for 1000) and lost 1.3–3.5 VMAF to the same encoder's two-pass encode. Each
 * choice against the anchor (two passes, slow-class preset, no VBV), 720p animation at
 * 1000/2000 kb/s:
 * - h264 `medium`: within 0.34 VMAF of the anchor at 1000 kb/s and 0.15 elsewhere (5th-percentile
 *   frame within 0.1) at 0.6–0.86× its CPU; `slow` + VBV was within 0.05 but cost 1.07–1.35×
 *   the anchor's CPU. x264's first pass is fast by default (a third of the CPU).
 * - h265 `medium` with a fast first pass (`slow-firstpass=0`): +0.06..+0.08 VMAF, 0.92–0.95×
 *   the CPU. `fast` the same way measured 0.75–0.99× with +0.0..+0.24 VMAF on 3 clips: the next
 *   candidate, not yet measured widely enough.
 * - vp8 cpu-used 1, as the anchor, without alt-ref frames: cpu-used 2 cost 0.6–0.85× the CPU
 *   within 0.45 VMAF, but on still content it spent 2–10 % more bits than the anchor for the
 *   same picture (moving colour bars at 600 kb/s: 272 against 247 kb/s), which the rule for
 *   content at its ceiling forbids; alt-ref frames (`-auto-alt-ref 1`) undershot 2000 kb/s by 11 %.
 * - vp9 cpu-used 2, as the anchor: cpu-used 3 and 4 (row-mt, alt-ref, lag 25) lost 0.9–1.0 VMAF
 *   (2 on the 5th-percentile frame). libvpx two-pass overshoots short clips (see
 *   correctedTargetKbps).
 * - libvpx's shortfalls where more bits would buy picture are its two passes' own (the anchor's
 *   too): VP8 on film grain at 1000 kb/s delivers 911 kb/s, VP8 and VP9 on the slides 791 and
 *   613. No setting measured fills them within the anchor's CPU: `-minrate` (a section's
 *   least share) of 50 % and 90 % spent less (VP8 slides 717 and 337 kb/s, film grain 787 and
 *   751); `-undershoot-pct 0`, `-auto-alt-ref 0`, `-max-intra-rate 0` and `-qmax 40` changed
 *   no byte (VP9 slides, VP8 film grain); `-qmin 0` took VP8's slides to 999 kb/s for +0.22
 *   VMAF at 1.3× the CPU, but would add filler at every ceiling, where VP8's least quantizer
 *   (4) is what stops it. The final pass again at a raised target fills them (the anchor's
 *   second run: +0.81 VMAF on film grain, +0.76 on VP9's slides) at about 1.9× the CPU, and the
 *   final pass's quantizers cannot tell a ceiling beforehand: bits-weighted, 5.3 (VP8) and 5.1
 *   (VP9) on the slides at 1000 kb/s, whose bits buy picture, against 4.1 and 0.9 at their
 *   ceiling at 2000 kb/s and 6.4 and 2.6 on colour bars (of 63; film grain 38.5). Nor do these
 *   fill them: the VBR bias (`-qcomp` 0–1: VP8 film grain 901–915 kb/s; VP9 slides 570–723,
 *   at 2000 kb/s 1160 against 1167), `-lag-in-frames 25` (no byte changed), libvpx 1.17 (the
 *   VMAF ffmpeg's: 910.9 kb/s again, VP9 slides 557). VP8 starves the film grain's first
 *   keyframe group (364–504 kb/s a second at quantizer 45–51) and spends 2785 kb/s in its last
 *   second; keyframes every 1 or 2 s land it at −3.3 % and −4.9 % but cost 1.93 and 0.60 VMAF.
 * - The price of the VBV on still slides with hard cuts (ceiling below 2000 kb/s): x265 spends
 *   5 % less than its anchor at 2000 kb/s; x264 spent 7 % more (1619 against 1518 kb/s) until
 *   its level was lifted past the keyframe cap of levels 3.1–4.0 (h264LevelArgs).
 */
export function videoCodecArgs(spec: TranscodeSpec, kbps: number, picture: LevelPicture): string[] {
  const vbv = { maxrateKbps: Math.round(kbps * PEAK_FACTOR), bufsizeKbit: kbps * BUFFER_SECONDS };
  const rate = [
    '-b:v',
    `${kbps}k`,
    '-maxrate',
    `${vbv.maxrateKbps}k`,
    '-bufsize',
    `${vbv.bufsizeKbit}k`,
  ];
  switch (spec.encoder) {
    case 'h264':
      return [
        ...['-c:v', 'libx264', '-preset', 'medium', ...rate, '-profile:v', 'high'],
        ...h264LevelArgs(picture, vbv),
      ];
    case 'h265':
      return ['-c:v', 'libx265', '-preset', 'medium', ...rate];
    case 'vp8':
      // The anchor's own settings, without -maxrate/-bufsize as VP9: with or without them VP8
      // delivered 249 kb/s on moving colour bars at its ceiling (the anchor 247); its peaks stay
      // within the bound without them (measured by the rate-control test).
      return ['-c:v', 'libvpx', '-deadline', 'good', '-cpu-used', '1', '-b:v', `${kbps}k`];
    case 'vp9':
      // No row-mt: it cost 1.16x the CPU time (user+sys) for the same VMAF at 2 threads. No
      // -maxrate/-bufsize: on still content they made libvpx-vp9 spend 2.4 % more than without
      // (moving colour bars at 600 kb/s: 469 against 458 kb/s), and its peaks stayed within the
      // bound without them (2.0x over 1 s at most, measured).
      return ['-c:v', 'libvpx-vp9', '-deadline', 'good', '-cpu-used', '2', '-b:v', `${kbps}k`];
  }
}

/**
 * The bitrate to give libvpx so that its two passes spend `kbps` over the clip's real length
 * when frames come at a variable rate and keep their own timestamps (WebM and Matroska: the
 * `vfr` frame-rate mode). libvpx budgets a two-pass encode as the bitrate times the length its
 * frames claim, and ffmpeg 5.1 tells it each frame lasts one tick of the encoder's time base,
 * one over the stream's nominal rate, whatever the timestamps say. A phone clip of nominal 60
 * fps whose frames come at 30 and 12 a second (24 on average) therefore got 24/60 of the
 * request: VP9 384 kb/s, VP8 404 kb/s for 1000. Scaled by the nominal rate over the average,
 * the budget is the request over the real length again; a constant rate (or the `cfr` mode,
 * where frames are repeated to the nominal rate) leaves `kbps` as it is. x264 and x265 read the
 * frames' timestamps and need no such scale.
 */
export function libvpxBudgetKbps(
  kbps: number,
  video: { frameRate: number; variableFrameRate: boolean; nominalFrameRate?: number },
): number {
  const nominal = video.nominalFrameRate ?? 0;
  if (!video.variableFrameRate || !(video.frameRate > 0) || !(nominal > 0)) return kbps;
  return Math.max(1, Math.round((kbps * nominal) / video.frameRate));
}

/**
 * Overshoot past which the final pass runs again (delivered video bitrate over the request,
 * less 1): the contract's rule is ±5 %, and the service's measure (packets' bits over the
 * stream's length) may differ from another's by a fraction of a percent.
 */
export const OVERSHOOT_LIMIT = 0.04;

/**
 * The target of a second try at the final pass when the first overshot the request by more than
 * OVERSHOOT_LIMIT, undefined when it did not. The first pass's statistics still hold (they
 * describe the picture, not the rate), so only the final pass runs again, at the target scaled
 * by how far the first try missed. libvpx-vp9's two passes overshoot where a scene cut falls
 * in the last frames of a short clip: the 5.3 s animation at 1000 kb/s delivered 1071 kb/s (its
 * own two-pass anchor too, and with `-overshoot-pct` 0 or 100, `-auto-alt-ref 0` or
 * `-lag-in-frames 16` alike); the cut 4 frames before the end became a 68 kB keyframe. Run
 * again at 934 kb/s it delivered 1003 kb/s, VMAF 91.49 against 91.95 at 1071 kb/s. An
 * undershoot is left alone: two passes undershoot where the picture reaches its ceiling, and
 * more bits would buy nothing.
 */
export function correctedTargetKbps(
  requestedKbps: number,
  deliveredKbps: number,
  targetKbps = requestedKbps,
): number | undefined {
  if (!(deliveredKbps > requestedKbps * (1 + OVERSHOOT_LIMIT))) return undefined;
  return Math.max(1, Math.round((targetKbps * requestedKbps) / deliveredKbps));
}
