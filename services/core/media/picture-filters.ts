import type { OutputSize } from './output-size.ts';
import type { VideoInfo } from './media-info.ts';

/** Which field comes first in an interlaced input that is to be deinterlaced. */
export type FieldParity = 'tff' | 'bff';

/** What a job does to its input's pictures besides scaling (decided once per job, see read-input.ts). */
export interface PicturePlan {
  video: VideoInfo;
  /** Deinterlace with this field first; unset: the input is progressive. */
  deinterlace?: FieldParity;
}

/** Tags a picture as 8-bit BT.709 limited range (what every output is), converting nothing. */
export const BT709_TAGS =
  'setparams=range=tv:color_primaries=bt709:color_trc=bt709:colorspace=bt709';

/**
 * Output colour tags: every output is 8-bit BT.709 limited range, whatever the input was, so
 * players never guess (an untagged HD file is shown as BT.601 by some).
 */
export const BT709_OUTPUT_ARGS: readonly string[] = [
  '-color_primaries',
  'bt709',
  '-color_trc',
  'bt709',
  '-colorspace',
  'bt709',
  '-color_range',
  'tv',
];

/**
 * The filters that turn a decoded input frame (already upright: ffmpeg applies the display
 * rotation before any filter) into what every output shows: deinterlaced, HDR tone-mapped to
 * SDR, converted to BT.709 limited range and scaled to `size` with square pixels. A GIF, which
 * cannot store a pixel aspect ratio, is then right too.
 */
export function pictureFilters(
  plan: PicturePlan,
  size: OutputSize,
  flags: string,
  /** A frame-rate filter, placed after deinterlacing (which needs every field). */
  rate?: string,
): string {
  return [
    ...(plan.deinterlace ? deinterlaceFilters(plan.deinterlace, plan.video) : []),
    ...(rate ? [rate] : []),
    ...(plan.video.dynamicRange === 'sdr' ? [] : [toneMapFilter(plan.video)]),
    scaleFilter(plan, size, flags),
    // swscale (5.1) converts but does not retag: later conversions (a GIF's to RGB) would read
    // the input's matrix.
    BT709_TAGS,
    'setsar=1',
  ].join(',');
}

/**
 * The colour part of pictureFilters alone (tone map, no scaling), for frames a job only samples
 * (a GIF's palette samples): their colours must be the output's.
 */
export function colourFilters(plan: PicturePlan): string | undefined {
  return plan.video.dynamicRange === 'sdr' ? undefined : toneMapFilter(plan.video);
}

/**
 * bwdif, one output frame per input frame (25i gives 25p, motion stays smooth and the length
 * exact), on 4:2:0 pictures: chroma subsampled after deinterlacing (DV's 4:1:1 to the output's
 * 4:2:0) came out with every other line from the other field, which idet found interlaced in 56
 * frames of 60; subsampled first, 0 of 60.
 */
function deinterlaceFilters(parity: FieldParity, video: VideoInfo): string[] {
  return [
    `format=${video.bitDepth > 8 ? 'yuv420p10le' : 'yuv420p'}`,
    `bwdif=mode=send_frame:parity=${parity}:deint=all`,
  ];
}

/**
 * PQ or HLG to SDR: to linear light (100 nits as 1.0), BT.2020 primaries to BT.709, Möbius
 * curve (keeps mid-tones as they are and rolls highlights off; Hable darkened a 203-nit
 * reference white to a mean luma of 84 against the SDR source's 125, Möbius 120), then the
 * BT.709 transfer (out-of-gamut colours clipped) and matrix in limited range. A plain cut to
 * 8 bits keeps the PQ or HLG signal, so the picture is washed out and its colours pale.
 */
function toneMapFilter(video: VideoInfo): string {
  const transfer = video.dynamicRange === 'pq' ? 'smpte2084' : 'arib-std-b67';
  const source = [
    `tin=${transfer}`,
    `pin=${video.colour.primaries === 'bt709' ? 'bt709' : '2020'}`,
    `min=${video.colour.matrix === 'bt2020c' ? '2020_cl' : '2020_ncl'}`,
    `rin=${video.colour.range === 'pc' ? 'full' : 'limited'}`,
  ].join(':');
  return [
    `zscale=${source}:t=linear:npl=100`,
    'format=gbrpf32le',
    'zscale=p=709',
    'tonemap=tonemap=mobius:desat=0',
    // The gamut conversion leaves out-of-gamut colours negative, and zimg 3.0.4 (Debian 12's
    // ffmpeg) and the later zimg of the libvmaf ffmpeg make different pictures of them in one
    // `t=709:m=709` step (luma PSNR 46 dB between the two on an HDR10 clip, which took 4.1 dB
    // off the quality report's PSNR, its reference made by the other build). The transfer
    // alone into 16 bits clips them, the same in both builds.
    'zscale=t=709',
    'format=gbrp16le',
    'zscale=m=709:r=limited',
    'format=yuv420p',
  ].join(',');
}

/** swscale's names of the matrices it converts from. */
const SCALE_MATRICES: Record<string, string> = {
  bt709: 'bt709',
  bt470bg: 'bt470',
  smpte170m: 'smpte170m',
  smpte240m: 'smpte240m',
  fcc: 'fcc',
  bt2020nc: 'bt2020',
  bt2020c: 'bt2020',
};

/**
 * Scale to the output size, converting the input's matrix to BT.709 and full range to limited.
 * An input that names no matrix is taken as players take it: BT.709 from 720 lines up, BT.601
 * below.
 */
function scaleFilter(plan: PicturePlan, size: OutputSize, flags: string): string {
  const { video } = plan;
  const toneMapped = video.dynamicRange !== 'sdr';
  const matrix = toneMapped
    ? 'bt709'
    : (SCALE_MATRICES[video.colour.matrix ?? ''] ?? (video.height >= 720 ? 'bt709' : 'bt601'));
  const range = !toneMapped && video.colour.range === 'pc' ? 'full' : 'tv';
  return [
    `scale=${size.width}:${size.height}`,
    `flags=${flags}`,
    `in_color_matrix=${matrix}`,
    'out_color_matrix=bt709',
    `in_range=${range}`,
    'out_range=tv',
  ].join(':');
}
