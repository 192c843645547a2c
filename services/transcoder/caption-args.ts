import type { Watermark } from '../core/contracts/types.generated.ts';
import type { CaptionTrack } from '../core/media/captions.ts';
import { iso639Part2 } from '../core/media/language-codes.ts';
import { PROTOCOLS } from '../core/media/run-ffmpeg.ts';
import { safePath } from '../core/media/safe-path.ts';

/** A transcode's captions: its soft tracks, in output order, and the one drawn into the picture. */
export interface TranscodeCaptions {
  tracks: CaptionTrack[];
  burnIn?: BurnIn;
}

/** How one track is drawn into the picture (the `subtitles` filter, libass). */
export interface BurnIn {
  track: CaptionTrack;
  /** The directory of the service's font (FONT_FILE), and that font's family name. */
  fontsDir: string;
  fontName: string | undefined;
  /** Distance from the picture's bottom edge to the text's, in output pixels. */
  marginPx: number;
}

/** The watermark's distance from the edge (prepare-watermark.ts) plus a gap above it, pixels. */
const WATERMARK_MARGIN = 16;
const GAP_PX = 8;
/** libass's script height for SubRip and WebVTT, which ffmpeg converts with this PlayResY. */
const SCRIPT_HEIGHT = 288;
/** ffmpeg's default style's MarginV (script units): where captions sit without a watermark below. */
const DEFAULT_MARGIN = 10;

/**
 * Where the burned-in track sits: at the bottom centre, above a watermark in a bottom corner
 * (its height, or a text watermark's line of `fontSize`, plus its margin and a gap).
 */
export function burnInMarginPx(watermark: Watermark | undefined, outputHeight: number): number {
  const position = watermark?.position ?? 'bottomRight';
  const low = position === 'bottomLeft' || position === 'bottomRight';
  const fallback = Math.ceil((DEFAULT_MARGIN * outputHeight) / SCRIPT_HEIGHT);
  if (!watermark || !low) return fallback;
  // A line of text is about 1.2 times its font size tall (ascender to descender).
  const height = 'text' in watermark ? Math.ceil(watermark.fontSize * 1.2) : watermark.height;
  return Math.max(fallback, WATERMARK_MARGIN + height + GAP_PX);
}

/** The `subtitles` filter that draws `burnIn` on a picture `outputHeight` pixels tall. */
export function burnInFilter(burnIn: BurnIn, outputHeight: number): string {
  const margin = Math.ceil((burnIn.marginPx * SCRIPT_HEIGHT) / outputHeight);
  // Inside the quotes only the filtergraph's own quoting matters; the name is checked to be plain.
  const font =
    burnIn.fontName && /^[A-Za-z0-9 ._-]+$/.test(burnIn.fontName)
      ? `FontName=${burnIn.fontName},`
      : '';
  return (
    `subtitles=filename=${safePath(burnIn.track.path)}:fontsdir=${safePath(burnIn.fontsDir)}` +
    `:force_style='${font}Alignment=2,MarginV=${margin}'`
  );
}

/** `-i` of each soft track (WebVTT files the job wrote), after the command's other inputs. */
export function captionInputs(tracks: readonly CaptionTrack[]): string[] {
  return tracks.flatMap((track) => [
    ...['-format_whitelist', 'webvtt', '-protocol_whitelist', PROTOCOLS],
    ...['-f', 'webvtt', '-i', track.path],
  ]);
}

/**
 * The soft tracks mapped into the output, `firstInput` the index of the first one's input: as
 * mov_text in MP4, WebVTT in WebM, each with its language (ISO 639-2, all MP4 stores) and its
 * label (MP4 players show the track's handler name; Matroska has a title).
 */
export function captionOutputArgs(
  tracks: readonly CaptionTrack[],
  container: 'mp4' | 'webm',
  firstInput: number,
): string[] {
  if (tracks.length === 0) return [];
  const labelKey = container === 'mp4' ? 'handler_name' : 'title';
  return [
    ...tracks.flatMap((_, k) => ['-map', `${firstInput + k}:0`]),
    '-c:s',
    container === 'mp4' ? 'mov_text' : 'webvtt',
    ...tracks.flatMap((track, k) => [
      `-metadata:s:s:${k}`,
      `language=${iso639Part2(track.language)}`,
      `-metadata:s:s:${k}`,
      `${labelKey}=${track.label}`,
    ]),
  ];
}
