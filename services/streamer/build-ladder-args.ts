import { h264LevelArgs } from '../core/media/h264-level.ts';
import { audioEncoderArgs, audioFormatFilter } from '../core/media/audio-format.ts';
import type { LadderEncoder, Rung } from './ladder.ts';
import { BT709_OUTPUT_ARGS, pictureFilters } from '../core/media/picture-filters.ts';
import type { PreparedWatermark } from '../core/watermarks/prepare-watermark.ts';
import type { JobInput } from '../core/media/read-input.ts';
import { encodedFrameRate, type QualityReference } from '../core/media/quality-args.ts';
import { inputArgs } from '../core/media/run-ffmpeg.ts';
import { jobInputArgs } from '../core/media/trim.ts';
import { passArgs, x265PassParams } from '../core/media/two-pass.ts';
import { thumbnailFilters, thumbnailOutputs, type ThumbnailPlan } from './thumbnails.ts';

/** The rendition name of the audio group's one rendition (its folder in the output). */
export const AUDIO_RENDITION = 'audio';

export interface LadderArgsOptions {
  input: JobInput;
  /** Largest first (see ladder.ts). */
  rungs: readonly Rung[];
  encoder: LadderEncoder;
  /** Target segment length, seconds; every segment starts on a keyframe of every rung. */
  segmentSeconds: number;
  /** The folder the renditions go to, one sub-folder per rung and `audio`. */
  outDir: string;
  threads: number;
  watermark?: PreparedWatermark;
  /** Sprite sheets and a poster from the same decode (see thumbnails.ts). */
  thumbnails?: ThumbnailPlan;
  /**
   * Path prefix, outside `outDir`, of the first pass's statistics (one file per rung; no `:` or
   * `=`, see two-pass.ts).
   */
  passLogPrefix: string;
  /** The audio's loudness filter, when the request asked for a loudness (loudness.ts). */
  loudnessFilter?: string;
}

/**
 * Fraction of a ladder's encoding CPU time its first pass takes, per encoder: the transcoder's
 * measured shares for the same settings (services/transcoder/rate-control.ts).
 */
export function firstPassShare(encoder: LadderEncoder): number {
  return FIRST_PASS_SHARE[encoder];
}

const FIRST_PASS_SHARE: Record<LadderEncoder, number> = { h264: 0.33, h265: 0.5, vp9: 0.06 };

/**
 * The ladder's two ffmpeg runs: the first analyses every rung's picture (video only, no
 * thumbnails, to the null muxer), the second encodes them from its statistics and writes the
 * renditions (buildLadderArgs). One pass missed a rung's bitrate by −11 % to +9 % on natural
 * clips (two passes: −1 % to +2.7 %, see rungCodecArgs).
 */
export function buildLadderPasses(o: LadderArgsOptions): [string[], string[]] {
  const top = o.rungs[0];
  if (!top) throw new Error('a ladder needs at least one rung');
  const analysis = [
    ...jobInputArgs(o.input),
    ...(o.watermark?.inputs.flatMap((i) => inputArgs(i)) ?? []),
    '-filter_complex',
    ladderGraph({ ...o, thumbnails: null }, top),
    ...o.rungs.flatMap((_, k) => ['-map', `[v${k}]`]),
    '-an',
    ...videoCodecArgs(o, 1),
    ...BT709_OUTPUT_ARGS,
    '-threads',
    String(o.threads),
    '-f',
    'null',
    '-',
  ];
  return [analysis, buildLadderArgs(o)];
}

/**
 * The second pass: one ffmpeg for the whole ladder. The input is decoded once, made into the top rung's picture
 * (deinterlaced, tone-mapped, BT.709, upright, watermarked), then `split` to every rung and
 * scaled down from there. Each rung is its own encoder; a keyframe is forced at every segment
 * boundary (scene cuts add none), so all rungs switch at the same instants. Audio is encoded
 * once (AAC) into its own rendition; thumbnails and the poster are two more branches. The HLS muxer writes CMAF fMP4 segments and a media
 * playlist per rendition; the master playlist and the MPD are written afterwards from the
 * measured segments (see write-manifests.ts).
 */
export function buildLadderArgs(o: LadderArgsOptions): string[] {
  const { input, rungs } = o;
  const top = rungs[0];
  if (!top) throw new Error('a ladder needs at least one rung');
  const audio = input.info.audio;
  return [
    ...jobInputArgs(input),
    ...(o.watermark?.inputs.flatMap((i) => inputArgs(i)) ?? []),
    '-filter_complex',
    ladderGraph(o, top),
    ...rungs.flatMap((_, k) => ['-map', `[v${k}]`]),
    ...(audio
      ? [
          '-map',
          `0:${audio.index}`,
          '-af',
          audioFormatFilter(audio, 'aac', o.loudnessFilter),
          ...audioEncoderArgs(audio, 'aac'),
        ]
      : []),
    ...videoCodecArgs(o, 2),
    ...BT709_OUTPUT_ARGS,
    '-threads',
    String(o.threads),
    '-map_metadata',
    '-1',
    ...muxerArgs(o, audio !== undefined),
    ...(o.thumbnails ? thumbnailOutputs(o.outDir) : []),
  ];
}

function ladderGraph(
  o: Omit<LadderArgsOptions, 'thumbnails'> & { thumbnails?: ThumbnailPlan | null },
  top: Rung,
): string {
  const picture = `[0:${o.input.video.index}]${pictureFilters(o.input, top, 'bicubic')}`;
  const source = o.watermark ? `${picture}[in];${o.watermark.filter(1)};[out]` : `${picture},`;
  const labels = [...o.rungs.map((_, k) => `[s${k}]`), ...(o.thumbnails ? ['[st]', '[sp]'] : [])];
  const split = `${source}split=${labels.length}${labels.join('')}`;
  const scaled = o.rungs.map((r, k) =>
    k === 0 ? `[s0]format=yuv420p[v0]` : `[s${k}]${downscale(r)},format=yuv420p[v${k}]`,
  );
  const images = o.thumbnails ? [thumbnailFilters(o.thumbnails, 'st', 'sp')] : [];
  return [split, ...scaled, ...images].join(';');
}

/** A lower rung made from the top rung's picture. */
export const downscale = (r: Rung): string => `scale=${r.width}:${r.height}:flags=bicubic,setsar=1`;

/**
 * What the rungs are measured against (see measureQualities): the input made into the top rung's
 * picture as the ladder makes it (deinterlaced, tone-mapped, upright), without the watermark,
 * made once for every rung; `rungFilters[k]` scales it down to rung `k` as the ladder does
 * (undefined for the top rung).
 */
export function ladderReference(
  input: JobInput,
  rungs: readonly Rung[],
): { reference: QualityReference; rungFilters: (string | undefined)[] } {
  const top = rungs[0];
  if (!top) throw new Error('a ladder needs at least one rung');
  const picture = pictureFilters(input, top, 'bicubic');
  const frameRate = encodedFrameRate(input);
  return {
    reference: {
      inputs: [jobInputArgs(input)],
      chain: (first) => `[${first}:${input.video.index}]${picture}`,
      ...(frameRate ? { frameRate } : {}),
    },
    rungFilters: rungs.map((r, k) => (k === 0 ? undefined : downscale(r))),
  };
}

/** Frames per GOP: one segment's worth (25 frames/s when the input does not say). */
export function gopFrames(frameRate: number, segmentSeconds: number): number {
  return Math.max(1, Math.round((frameRate > 0 ? frameRate : 25) * segmentSeconds));
}

/**
 * Every rung's encoder, rate and keyframes, for pass `pass` (both passes must say the same).
 * The frame-rate mode is said on both: the HLS muxer of the second pass makes ffmpeg choose a
 * constant rate, the null muxer of the first would pass timestamps through, and the passes would
 * then count different frames on a variable-frame-rate input.
 */
function videoCodecArgs(o: LadderArgsOptions, pass: 1 | 2): string[] {
  const gop = gopFrames(o.input.video.frameRate, o.segmentSeconds);
  const perRung = o.rungs.flatMap((r, k) => [
    `-b:v:${k}`,
    `${r.bitrateKbps}k`,
    `-maxrate:v:${k}`,
    `${r.maxrateKbps}k`,
    `-bufsize:v:${k}`,
    `${r.bufsizeKbps}k`,
  ]);
  // A keyframe at every multiple of the segment length (by time, so a variable frame rate
  // keeps the boundaries), and no others: -g caps the GOP, scene cuts insert none.
  const keyframes = [
    '-force_key_frames',
    `expr:gte(t,n_forced*${o.segmentSeconds})`,
    '-g',
    String(gop),
    '-keyint_min',
    String(gop),
    '-fps_mode:v',
    'cfr',
  ];
  return [...rungCodecArgs(o, pass), ...keyframes, ...perRung];
}

/**
 * The encoder settings of the rungs: the transcoder's (services/transcoder/rate-control.ts),
 * measured again as a ladder against the same encoder's two passes at its slow-class preset
 * (two 5 s 640x360 natural clips, animation and fast motion, 800 and 400 kb/s rungs, VMAF of the
 * 360p rung). Every rung keeps the stream's constraints: a keyframe at each segment boundary
 * only, VBV at 1.2× for 1 s, no alt-ref frames for VP9.
 * - h264 `slow`, the anchor's own, at level 4.1 where x264 would choose 3.1–4.0 (h264Level:
 *   their cap on a frame under VBV, a quarter of a raw picture, is less than a 720p rung's
 *   buffer): `medium` came within 0.11–0.42 VMAF of it on 3 natural clips at 0.63–0.75 of its
 *   CPU, but 0.68 below on fast motion starved at 180p 250 kb/s
 *   (test/integration/ladder-rate-control.test.ts); `veryfast`, the setting before two passes,
 *   was 1.2–3.7 below.
 * - h265 `medium`: +0.1 and +2.8 VMAF over `fast` at 1.0–1.36× its CPU; one frame thread per
 *   rung (below).
 * - vp9 cpu-used 2 without row-mt, the anchor's own: cpu-used 5 (the previous setting) was 0.4
 *   and 7.7 VMAF below it, at half its CPU; cpu-used 3 0.5 and 6.4 below.
 */
function rungCodecArgs(o: LadderArgsOptions, pass: 1 | 2): string[] {
  switch (o.encoder) {
    case 'h264':
      return [
        '-c:v',
        'libx264',
        '-preset',
        'slow',
        '-profile:v',
        'high',
        '-sc_threshold',
        '0',
        '-x264-params',
        'open-gop=0',
        ...passArgs('h264', pass, o.passLogPrefix),
        ...o.rungs.flatMap((r, k) =>
          h264LevelArgs(
            {
              ...r,
              frameRate: o.input.video.frameRate,
              variableFrameRate: o.input.video.variableFrameRate,
            },
            { maxrateKbps: r.maxrateKbps, bufsizeKbit: r.bufsizeKbps },
            `v:${k}`,
          ),
        ),
      ];
    case 'h265':
      return [
        '-c:v',
        'libx265',
        '-preset',
        'medium',
        '-tag:v',
        'hvc1',
        // x265 takes its pass per stream, each rung with its own stats file. One frame thread
        // per rung: the rungs' encoders already run side by side, and their frame threads on
        // top cost 12 % more CPU for the same ladder (4 rungs of 720p animation: 68.4 s
        // against 60.3 s user+system).
        ...o.rungs.flatMap((_, k) => [
          `-x265-params:v:${k}`,
          `log-level=error:scenecut=0:open-gop=0:frame-threads=1:${x265PassParams(pass, `${o.passLogPrefix}-${k}`)}`,
        ]),
      ];
    case 'vp9':
      return [
        '-c:v',
        'libvpx-vp9',
        '-deadline',
        'good',
        '-cpu-used',
        '2',
        '-auto-alt-ref',
        '0',
        ...passArgs('vp9', pass, o.passLogPrefix),
      ];
  }
}

function muxerArgs(o: LadderArgsOptions, withAudio: boolean): string[] {
  const group = withAudio ? ',agroup:audio' : '';
  const streams = [
    ...o.rungs.map((r, k) => `v:${k}${group},name:${r.name}`),
    ...(withAudio ? [`a:0${group},name:${AUDIO_RENDITION}`] : []),
  ];
  return [
    '-f',
    'hls',
    '-hls_time',
    String(o.segmentSeconds),
    '-hls_playlist_type',
    'vod',
    '-hls_segment_type',
    'fmp4',
    '-hls_flags',
    'independent_segments',
    '-hls_fmp4_init_filename',
    'init.mp4',
    '-hls_segment_filename',
    `${o.outDir}/%v/seg_%05d.m4s`,
    '-var_stream_map',
    streams.join(' '),
    '-y',
    `${o.outDir}/%v/index.m3u8`,
  ];
}
