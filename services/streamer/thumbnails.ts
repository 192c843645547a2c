/**
 * Scrub-bar thumbnails and a poster, made by the ladder's own ffmpeg from the same decode (two
 * more branches of its `split`): sprite sheets of tiles at a fixed interval, and a WebVTT track
 * that maps each interval to its tile (`sprite_001.jpg#xywh=x,y,w,h`), as players read it.
 */
import { even } from '../core/media/output-size.ts';

/** The folder of the thumbnails under the output prefix. */
export const THUMBNAILS_DIR = 'thumbnails';
export const POSTER_FILE = 'poster.jpg';
export const THUMBNAIL_TRACK = 'thumbnails.vtt';
const COLUMNS = 10;
const ROWS = 10;

/** What a caller may set (all optional). */
export interface ThumbnailOptions {
  /** Seconds between tiles; default 5. */
  intervalSeconds?: number;
  /** Tile width in pixels; default 160 (height from the displayed aspect). */
  width?: number;
  /** Where the poster is taken, seconds; default a quarter into the input. */
  posterSeconds?: number;
}

export interface ThumbnailPlan {
  intervalSeconds: number;
  tileWidth: number;
  tileHeight: number;
  columns: number;
  rows: number;
  /** Tiles in all (one per interval begun). */
  count: number;
  sheets: number;
  posterSeconds: number;
  /** Poster size: the top rung's. */
  poster: { width: number; height: number };
}

export function planThumbnails(
  o: ThumbnailOptions,
  display: { width: number; height: number },
  durationSeconds: number,
  poster: { width: number; height: number },
): ThumbnailPlan {
  const intervalSeconds = o.intervalSeconds ?? 5;
  const tileWidth = even(o.width ?? 160);
  const count = Math.max(1, Math.ceil(durationSeconds / intervalSeconds - 1e-6));
  return {
    intervalSeconds,
    tileWidth,
    tileHeight: even((tileWidth * display.height) / display.width),
    columns: COLUMNS,
    rows: ROWS,
    count,
    sheets: Math.ceil(count / (COLUMNS * ROWS)),
    posterSeconds: Math.min(o.posterSeconds ?? durationSeconds / 4, durationSeconds * 0.99),
    poster,
  };
}

/** The sprite sheet's file name (1-based, as ffmpeg's image2 numbers them). */
export const sheetName = (k: number): string => `sprite_${String(k).padStart(3, '0')}.jpg`;

/**
 * Filtergraph branches from `[in]` labels to `[thumbs]` and `[poster]`. `eof_action=pass`: the
 * fps filter otherwise rounds the input's end down too and drops the last interval's tile (a
 * 7 s clip at 2 s gave 3 tiles, not 4).
 */
export function thumbnailFilters(plan: ThumbnailPlan, tilesIn: string, posterIn: string): string {
  return [
    `[${tilesIn}]fps=1/${plan.intervalSeconds}:round=down:eof_action=pass,scale=${plan.tileWidth}:${plan.tileHeight}:flags=bicubic,setsar=1,tile=${plan.columns}x${plan.rows}[thumbs]`,
    `[${posterIn}]select='gte(t\\,${plan.posterSeconds.toFixed(3)})',scale=${plan.poster.width}:${plan.poster.height}:flags=bicubic,setsar=1[poster]`,
  ].join(';');
}

/** The two image outputs of the ladder's ffmpeg (after its HLS output). */
export function thumbnailOutputs(outDir: string): string[] {
  const dir = `${outDir}/${THUMBNAILS_DIR}`;
  return [
    ...['-map', '[thumbs]', '-c:v', 'mjpeg', '-q:v', '4', '-f', 'image2'],
    `${dir}/sprite_%03d.jpg`,
    ...['-map', '[poster]', '-frames:v', '1', '-c:v', 'mjpeg', '-q:v', '3'],
    ...['-f', 'image2', '-update', '1', `${dir}/${POSTER_FILE}`],
  ];
}

/** `HH:MM:SS.mmm` */
function vttTime(seconds: number): string {
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor(ms / 60_000) % 60;
  const s = (ms / 1000) % 60;
  return `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${s.toFixed(3).padStart(6, '0')}`;
}

/** The WebVTT thumbnail track: one cue per tile, its sheet (relative to the track) and region. */
export function thumbnailTrack(plan: ThumbnailPlan, durationSeconds: number): string {
  const perSheet = plan.columns * plan.rows;
  const cues = Array.from({ length: plan.count }, (_, k) => {
    const start = k * plan.intervalSeconds;
    const end = Math.min((k + 1) * plan.intervalSeconds, durationSeconds);
    const within = k % perSheet;
    const x = (within % plan.columns) * plan.tileWidth;
    const y = Math.floor(within / plan.columns) * plan.tileHeight;
    const sheet = sheetName(Math.floor(k / perSheet) + 1);
    return `${vttTime(start)} --> ${vttTime(end)}\n${sheet}#xywh=${x},${y},${plan.tileWidth},${plan.tileHeight}\n`;
  });
  return ['WEBVTT', '', ...cues].join('\n');
}
