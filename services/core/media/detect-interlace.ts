import { readFile } from 'node:fs/promises';
import type { FieldParity } from './picture-filters.ts';
import type { VideoInfo } from './media-info.ts';
import { safePath } from './safe-path.ts';
import { inputArgs, type FfmpegRunner } from './run-ffmpeg.ts';

/** Frames `idet` looks at: a few seconds of video, a fraction of a second of decoding. */
const IDET_FRAMES = 120;

/** Codecs with no interlaced coding at all: a stream that names no field order is progressive. */
const PROGRESSIVE_CODECS = new Set(['vp8', 'vp9', 'av1', 'theora', 'gif', 'png', 'webp', 'apng']);

/**
 * Whether (and with which field first) a video must be deinterlaced: from the field order the
 * stream declares, else, for a codec that can carry interlaced pictures, from a short `idet`
 * pass over its first frames (an MPEG-4 part 2 AVI or an MJPEG camera file says nothing).
 */
export async function fieldParity(
  deps: { runFfmpeg: FfmpegRunner; stallTimeoutMs: number },
  signal: AbortSignal,
  o: { inputPath: string; video: VideoInfo; scratchPath: string },
): Promise<FieldParity | undefined> {
  const order = o.video.fieldOrder;
  if (order === 'tff' || order === 'bff') return order;
  if (order === 'progressive' || PROGRESSIVE_CODECS.has(o.video.codec)) return undefined;
  await deps.runFfmpeg(
    [
      ...inputArgs(o.inputPath),
      '-map',
      `0:${o.video.index}`,
      '-vf',
      `idet,metadata=mode=print:key=lavfi.idet.multiple.current_frame:file=${safePath(o.scratchPath)}`,
      '-frames:v',
      String(IDET_FRAMES),
      '-an',
      '-f',
      'null',
      '-',
    ],
    { signal, stallTimeoutMs: deps.stallTimeoutMs },
  );
  return idetVerdict(await readFile(o.scratchPath, 'utf8'));
}

/**
 * idet's per-frame verdicts (multi-frame detection, which settles after a few frames): interlaced
 * when at least half the frames with a verdict are, with the field order most of them show.
 */
export function idetVerdict(printed: string): FieldParity | undefined {
  const counts = { tff: 0, bff: 0, progressive: 0 };
  for (const match of printed.matchAll(/current_frame=(tff|bff|progressive)/g)) {
    const kind = match[1] as keyof typeof counts;
    counts[kind]++;
  }
  const interlaced = counts.tff + counts.bff;
  if (interlaced < 10 || interlaced < counts.progressive) return undefined;
  return counts.tff >= counts.bff ? 'tff' : 'bff';
}
