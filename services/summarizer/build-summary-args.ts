import type { SummarySpec } from '../core/contracts/types.generated.ts';
import type { OutputSize } from '../core/media/output-size.ts';
import type { PreparedWatermark } from '../core/media/prepare-watermark.ts';
import { inputArgs } from '../core/media/run-ffmpeg.ts';
import type { SummarySegment } from './select-segments.ts';

/** Frames per second of a GIF: smooth enough for a preview, a fraction of the bytes of 25. */
export const GIF_FPS = 12;

/** A stretch of the input read as one `-ss … -t … -i` input. */
export interface Clip {
  startSeconds: number;
  durationSeconds: number;
}

/** Segments that follow on without a gap (an input used whole) are read as one clip. */
export function clipsOf(segments: readonly SummarySegment[]): Clip[] {
  const clips: Clip[] = [];
  for (const s of segments) {
    const last = clips.at(-1);
    if (last && Math.abs(last.startSeconds + last.durationSeconds - s.startSeconds) < 1e-6)
      last.durationSeconds = round(last.durationSeconds + s.durationSeconds);
    else clips.push({ startSeconds: s.startSeconds, durationSeconds: s.durationSeconds });
  }
  return clips;
}

/**
 * One `-ss … -t … -i` input per clip joined with concat, audio too (5× faster than trimming one
 * input, and each clip starts on its own decoded frame: no black or frozen frames at the joins).
 * GIFs get a palette from their own frames (stats_mode=diff, bayer dither: the best size for
 * the quality among single-palette options; error diffusion crawls between frames). MP4s are
 * bit-exact for the same input, settings and thread count.
 */
export function buildSummaryArgs(o: {
  spec: SummarySpec;
  inputPath: string;
  outputPath: string;
  clips: readonly Clip[];
  size: OutputSize;
  hasAudio: boolean;
  /**
   * The input is MP4/MOV: its header describes every stream, so each clip's input skips stream
   * probing (22 one-second clips of a 10-minute 720p input: 4.1 s → 2.6 s). Default false.
   */
  describedByHeader?: boolean;
  threads: number;
  watermark?: PreparedWatermark;
}): string[] {
  const n = o.clips.length;
  const audio = o.spec.format === 'mp4' && o.hasAudio && !o.spec.removeAudio;
  const probing = o.describedByHeader ? ['-analyzeduration', '0', '-probesize', '32768'] : [];
  const inputs = o.clips.flatMap((c) =>
    inputArgs(o.inputPath, [
      ...probing,
      '-ss',
      String(c.startSeconds),
      '-t',
      String(c.durationSeconds),
    ]),
  );
  const wmInputs = o.watermark?.inputs.flatMap((i) => inputArgs(i)) ?? [];
  // A seek between two frames gives the clip's first frame a small positive time; the output
  // would fill the gap by showing that frame twice (a frozen frame at the join).
  const starts = o.clips.map((_, i) => `[${i}:v]setpts=PTS-STARTPTS[c${i}];`).join('');
  const parts = o.clips.map((_, i) => `[c${i}]${audio ? `[${i}:a]` : ''}`).join('');
  // A GIF drops frames before it scales them: half the scaling work at 25 fps sources.
  const fps = o.spec.format === 'gif' ? `fps=${GIF_FPS},` : '';
  const scale = `${fps}scale=${o.size.width}:${o.size.height}:flags=lanczos,setsar=1`;
  const watermark = o.watermark ? `[in];${o.watermark.filter(n)};[out]` : ',';
  const body = `${starts}${parts}concat=n=${n}:v=1:a=${audio ? 1 : 0}[cv]${audio ? '[a]' : ''};[cv]${scale}${watermark}`;
  const common = [
    ...inputs,
    ...wmInputs,
    '-threads',
    String(o.threads),
    '-map_metadata',
    '-1',
    '-fflags',
    '+bitexact',
    '-flags',
    '+bitexact',
  ];
  if (o.spec.format === 'gif') {
    // The palette's statistics come from every other pixel of every other row (nearest
    // neighbour keeps the colours exact): palettegen hashes each pixel it sees and was the
    // costliest step of a GIF. On 12 s of the benchmark's clips: 2.8 → 1.7 CPU s for the
    // whole render, the same size (+0.4 %) and PSNR against the scaled source (25.3 dB both).
    const sample = 'scale=w=max(1\\,iw/2):h=max(1\\,ih/2):flags=neighbor,';
    const graph = `${body}split[p0][p1];[p0]${sample}palettegen=stats_mode=diff[pal];[p1][pal]paletteuse=dither=bayer:bayer_scale=5:diff_mode=rectangle[v]`;
    // -loop 0: the GIF plays forever.
    return [
      ...common,
      '-filter_complex',
      graph,
      '-map',
      '[v]',
      '-loop',
      '0',
      '-f',
      'gif',
      '-y',
      o.outputPath,
    ];
  }
  // ultrafast with the deblocking filter back on: a preview of up to 30 s at source width must
  // cost a fraction of decoding the input. On 12 s of the benchmark's 720p clips (2 cores, CPU
  // seconds): ultrafast 1.6–1.9 s, 10.4 MB; with deblocking ≈ the same time (it keeps block
  // edges out of the picture); superfast 3.3–4.1 s, 7.8 MB; superfast without CABAC 2.7 s,
  // 8.9 MB. The MP4 job spent more on its encode than on its analysis (bench/summary-speed.ts).
  return [
    ...common,
    '-filter_complex',
    `${body}format=yuv420p[v]`,
    '-map',
    '[v]',
    ...(audio ? ['-map', '[a]', '-c:a', 'aac', '-b:a', '128k'] : ['-an']),
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-x264-params',
    'deblock=0,0',
    '-crf',
    '23',
    '-movflags',
    '+faststart',
    '-f',
    'mp4',
    '-y',
    o.outputPath,
  ];
}

const round = (n: number): number => Math.round(n * 1000) / 1000;
