/**
 * The arguments that make an ffmpeg run one pass of a two-pass encode: the first analyses the
 * picture and writes statistics, the second encodes from them. Used by the transcoder (one
 * output) and the streamer (every rung of a ladder in one ffmpeg).
 */

/** Encoders that take their pass through ffmpeg's `-pass`/`-passlogfile` (x264, libvpx). */
export type PassedEncoder = 'h264' | 'h265' | 'vp8' | 'vp9';

/**
 * The pass and stats file of libx265, as `key=value` items of `-x265-params`: ffmpeg 5.1's
 * `-pass`/`-passlogfile` drive x264 and libvpx but never reach libx265 (it ignores them and
 * encodes one pass). x265's first pass is as slow as its second by default (`slow-firstpass`);
 * made fast, bitrate and VMAF stayed within the two-pass anchor's (see
 * services/transcoder/rate-control.ts). `statsPrefix` must hold no `:` or `=`.
 */
export function x265PassParams(pass: 1 | 2, statsPrefix: string): string {
  if (/[:=]/.test(statsPrefix)) throw new Error(`pass log prefix ${statsPrefix} holds ':' or '='`);
  return `pass=${pass}:stats=${statsPrefix}-x265.log:slow-firstpass=0`;
}

/**
 * Which pass a run is and where its statistics go, for every video stream of the output. ffmpeg
 * names each stream's file `<prefix>-<stream index>.log` (x264 adds `.mbtree`), so the streams
 * of one output may share a prefix; x265 gets it through `-x265-params` (see x265PassParams).
 */
export function passArgs(encoder: PassedEncoder, pass: 1 | 2, prefix: string): string[] {
  if (encoder !== 'h265') return ['-pass', String(pass), '-passlogfile', prefix];
  return ['-x265-params', `log-level=error:${x265PassParams(pass, prefix)}`];
}
