import { audioEncoderArgs, audioFormatFilter } from '../core/media/audio-format.ts';
import type { LadderEncoder, Rung } from '../core/media/ladder.ts';
import { BT709_OUTPUT_ARGS, pictureFilters } from '../core/media/picture-filters.ts';
import type { PreparedWatermark } from '../core/watermarks/prepare-watermark.ts';
import type { JobInput } from '../core/media/read-input.ts';
import type { QualityReference } from '../core/media/quality-args.ts';
import { inputArgs } from '../core/media/run-ffmpeg.ts';
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
}

/**
 * One ffmpeg for the whole ladder: the input is decoded once, made into the top rung's picture
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
    ...inputArgs(input.path),
    ...(o.watermark?.inputs.flatMap((i) => inputArgs(i)) ?? []),
    '-filter_complex',
    ladderGraph(o, top),
    ...rungs.flatMap((_, k) => ['-map', `[v${k}]`]),
    ...(audio
      ? [
          '-map',
          `0:${audio.index}`,
          '-af',
          audioFormatFilter(audio, 'aac'),
          ...audioEncoderArgs(audio, 'aac'),
        ]
      : []),
    ...videoCodecArgs(o),
    ...BT709_OUTPUT_ARGS,
    '-threads',
    String(o.threads),
    '-map_metadata',
    '-1',
    ...muxerArgs(o, audio !== undefined),
    ...(o.thumbnails ? thumbnailOutputs(o.outDir) : []),
  ];
}

function ladderGraph(o: LadderArgsOptions, top: Rung): string {
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
const downscale = (r: Rung): string => `scale=${r.width}:${r.height}:flags=bicubic,setsar=1`;

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
  return {
    reference: {
      inputs: [inputArgs(input.path)],
      chain: (first) => `[${first}:${input.video.index}]${picture}`,
    },
    rungFilters: rungs.map((r, k) => (k === 0 ? undefined : downscale(r))),
  };
}

/** Frames per GOP: one segment's worth (25 frames/s when the input does not say). */
export function gopFrames(frameRate: number, segmentSeconds: number): number {
  return Math.max(1, Math.round((frameRate > 0 ? frameRate : 25) * segmentSeconds));
}

function videoCodecArgs(o: LadderArgsOptions): string[] {
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
  ];
  switch (o.encoder) {
    case 'h264':
      return [
        '-c:v',
        'libx264',
        '-preset',
        'veryfast',
        '-profile:v',
        'high',
        '-sc_threshold',
        '0',
        '-x264-params',
        'open-gop=0',
        ...keyframes,
        ...perRung,
      ];
    case 'h265':
      return [
        '-c:v',
        'libx265',
        '-preset',
        'fast',
        '-tag:v',
        'hvc1',
        '-x265-params',
        'log-level=error:scenecut=0:open-gop=0',
        ...keyframes,
        ...perRung,
      ];
    case 'vp9':
      return [
        '-c:v',
        'libvpx-vp9',
        '-deadline',
        'good',
        '-cpu-used',
        '5',
        '-row-mt',
        '1',
        '-auto-alt-ref',
        '0',
        ...keyframes,
        ...perRung,
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
