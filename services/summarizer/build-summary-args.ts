import type { SummarySpec } from '../core/contracts/types.generated.ts';
import type { PreparedWatermark } from '../core/media/prepare-watermark.ts';
import { inputArgs } from '../core/media/run-ffmpeg.ts';
import type { Segment } from './plan-segments.ts';

/** Width of a GIF when the caller gives none: GIFs at source width are needlessly huge. */
export const DEFAULT_GIF_WIDTH = 480;

/**
 * One `-ss … -t … -i` input per segment joined with concat (much faster than trimming one
 * input); GIFs get a palette from their own frames (palettegen/paletteuse, bayer dither).
 */
export function buildSummaryArgs(o: {
  spec: SummarySpec;
  inputPath: string;
  outputPath: string;
  segments: readonly Segment[];
  width: number;
  hasAudio: boolean;
  threads: number;
  watermark?: PreparedWatermark;
}): string[] {
  const n = o.segments.length;
  const audio = o.spec.format === 'mp4' && o.hasAudio && !o.spec.removeAudio;
  const inputs = o.segments.flatMap((s) => inputArgs(o.inputPath, ['-ss', String(s.startSeconds), '-t', String(s.durationSeconds)]));
  const wmInputs = o.watermark?.inputs.flatMap((i) => inputArgs(i)) ?? [];
  const parts = o.segments.map((_, i) => `[${i}:v]${audio ? `[${i}:a]` : ''}`).join('');
  const fps = o.spec.format === 'gif' ? ',fps=12' : '';
  const scale = `scale=${o.width}:-2:flags=lanczos,setsar=1${fps}`;
  const watermark = o.watermark ? `[in];${o.watermark.filter.replaceAll('[1:v]', `[${n}:v]`)};[out]` : ',';
  const body = `${parts}concat=n=${n}:v=1:a=${audio ? 1 : 0}[cv]${audio ? '[a]' : ''};[cv]${scale}${watermark}`;
  if (o.spec.format === 'gif') {
    const graph = `${body}split[p0][p1];[p0]palettegen=stats_mode=diff[pal];[p1][pal]paletteuse=dither=bayer:bayer_scale=5:diff_mode=rectangle[v]`;
    return [...inputs, ...wmInputs, '-filter_complex', graph, '-map', '[v]', '-loop', '0', '-threads', String(o.threads), '-f', 'gif', '-y', o.outputPath];
  }
  const graph = `${body}format=yuv420p[v]`;
  return [
    ...inputs, ...wmInputs, '-filter_complex', graph, '-map', '[v]', ...(audio ? ['-map', '[a]', '-c:a', 'aac', '-b:a', '128k'] : ['-an']),
    '-c:v', 'libx264', '-preset', 'medium', '-crf', '23', '-threads', String(o.threads), '-map_metadata', '-1', '-movflags', '+faststart', '-f', 'mp4', '-y', o.outputPath,
  ];
}
