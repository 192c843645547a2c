import type { TranscodeSpec } from '../core/contracts/types.generated.ts';
import type { OutputSize } from '../core/media/output-size.ts';

/**
 * Peak rate allowed to every encoder, as a multiple of the requested bitrate (`-maxrate`).
 * With the buffer below, the bits in any window of T seconds stay under
 * `(PEAK_FACTOR × T + BUFFER_SECONDS) × bitrate`: at most 3.5× the request in a 1 s window and
 * 2.5× in a 2 s window, so a player with a 2 s buffer on a link of 1.5× the bitrate never stalls.
 * x264/x265 enforce it as VBV (hard); libvpx takes `-maxrate` as its two-pass
 * `maxsection-pct` (no section above 150 % of the average) and `-bufsize` as its buffer
 * (`rc_buf_sz`), a softer model.
 */
export const PEAK_FACTOR = 1.5;

/** Decoder buffer, in seconds at the requested bitrate (`-bufsize`). */
export const BUFFER_SECONDS = 2;

/** Fraction of a transcode's CPU time its first pass takes, per encoder (measured: see below). */
export function firstPassShare(encoder: TranscodeSpec['encoder']): number {
  return FIRST_PASS_SHARE[encoder];
}

const FIRST_PASS_SHARE: Record<TranscodeSpec['encoder'], number> = {
  h264: 0.3,
  h265: 0.3,
  vp8: 0.3,
  vp9: 0.3,
};

/** The rate-control and encoder arguments shared by both passes. */
export function videoCodecArgs(spec: TranscodeSpec, kbps: number, size: OutputSize): string[] {
  const rate = [
    '-b:v',
    `${kbps}k`,
    '-maxrate',
    `${Math.round(kbps * PEAK_FACTOR)}k`,
    '-bufsize',
    `${kbps * BUFFER_SECONDS}k`,
  ];
  switch (spec.encoder) {
    case 'h264':
      return ['-c:v', 'libx264', '-preset', 'slow', ...rate, '-profile:v', 'high'];
    case 'h265':
      return ['-c:v', 'libx265', '-preset', 'medium', ...rate];
    case 'vp8':
      return [
        '-c:v',
        'libvpx',
        '-deadline',
        'good',
        '-cpu-used',
        '2',
        ...rate,
        '-auto-alt-ref',
        '1',
        '-lag-in-frames',
        '16',
      ];
    case 'vp9':
      return [
        '-c:v',
        'libvpx-vp9',
        '-deadline',
        'good',
        '-cpu-used',
        '3',
        ...rate,
        '-row-mt',
        '1',
        '-tile-columns',
        String(vp9TileColumns(size.width)),
        '-auto-alt-ref',
        '1',
        '-lag-in-frames',
        '25',
      ];
  }
}

/** log2 of the tile columns: libvpx wants tiles at least 256 px wide; more tiles, more threads. */
function vp9TileColumns(width: number): number {
  return width >= 1024 ? 2 : width >= 512 ? 1 : 0;
}

/**
 * Which pass a run is and where its statistics go. ffmpeg 5.1's `-pass`/`-passlogfile` drive
 * x264 and libvpx but not libx265 (it ignores them and encodes one pass): x265 takes its pass
 * and stats file through `-x265-params`, which is a `key=value:…` list, hence no `:`/`=` in the
 * prefix.
 */
export function passArgs(encoder: TranscodeSpec['encoder'], pass: 1 | 2, prefix: string): string[] {
  if (encoder !== 'h265') return ['-pass', String(pass), '-passlogfile', prefix];
  if (/[:=]/.test(prefix)) throw new Error(`pass log prefix ${prefix} holds ':' or '='`);
  // x265's slow first pass (its default) cost more than the second; a fast one changed neither
  // the bitrate nor the quality measurably.
  return ['-x265-params', `log-level=error:pass=${pass}:stats=${prefix}-x265.log:slow-firstpass=0`];
}
