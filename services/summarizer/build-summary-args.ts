import type { SummarySpec } from '../core/contracts/types.generated.ts';
import type { OutputSize } from '../core/media/output-size.ts';
import type { PreparedWatermark } from '../core/watermarks/prepare-watermark.ts';
import { join } from 'node:path';
import { audioEncoderArgs, audioFormatFilter } from '../core/media/audio-format.ts';
import type { AudioInfo } from '../core/media/media-info.ts';
import type { InputTrim } from '../core/media/trim.ts';
import {
  BT709_OUTPUT_ARGS,
  pictureFilters,
  type PicturePlan,
} from '../core/media/picture-filters.ts';
import type { QualityReference } from '../core/media/quality-args.ts';
import { inputArgs, partsListInput } from '../core/media/run-ffmpeg.ts';
import { paletteFromSamplesArgs } from './palette-samples.ts';
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

/** What a summary render needs to know; the same for each of its passes. */
export interface SummaryRender {
  spec: SummarySpec;
  inputPath: string;
  outputPath: string;
  clips: readonly Clip[];
  size: OutputSize;
  /** The input's video and what its pictures need (deinterlacing, tone mapping). */
  picture: PicturePlan;
  /** The part of the input the job uses (a trim): clip times are counted from its start. */
  trim?: InputTrim;
  /** The input's audio stream, when it has one. */
  audio?: AudioInfo;
  /**
   * The input is MP4/MOV: its header describes every stream, so each clip's input skips stream
   * probing (22 one-second clips of a 10-minute 720p input: 4.1 s → 2.6 s). Default false.
   */
  describedByHeader?: boolean;
  threads: number;
  watermark?: PreparedWatermark;
  /** Where a GIF's palette (a 16×16 PNG) goes between its two steps; required for a GIF. */
  palettePath?: string;
  /** A GIF's palette samples (rgb24 frames, see collectPaletteSamples); required for a GIF. */
  paletteSamples?: { path: string; width: number; height: number };
  /**
   * A directory for the parts of a render split across threads (the job's own); unset: one
   * ffmpeg renders the whole summary.
   */
  partsDir?: string;
}

/** What a summary render runs. */
export interface SummaryPlan {
  /** The ffmpeg runs: those of one step side by side, the steps one after the other. */
  steps: string[][][];
  /** Files the runs read (the list of an MP4's parts), written before the first step. */
  files: { path: string; content: string }[];
  /** GIF parts joined frame by frame into the output after the last step (see joinGifs). */
  gifParts?: string[];
}

/** Most parts a render is split into, however many threads it has. */
export const MAX_RENDER_PARTS = 4;

/**
 * The ffmpeg runs of a summary: for an MP4 one, or its parts side by side then their join; for
 * a GIF its palette from the analysis's samples, then the render, in parts side by side when
 * it has them (see gifPasses).
 *
 * Each run reads one `-ss … -t … -i` input per clip joined with concat, audio too (each input
 * seeks to its clip, where trimming one input decodes everything before it, and each clip
 * starts on its own decoded frame: no black or frozen frames at the joins). Each clip's decoder
 * runs on one thread: the clips are decoded one after the other, so a frame-threaded decoder
 * per clip would hold frames for nothing, costing memory and CPU.
 *
 * So one render keeps about one core busy (decoding one clip after the other, then a GIF's
 * `paletteuse` and encoder, both single-threaded): with `partsDir` and more than one thread,
 * the clips are cut into one run of consecutive clips per thread (see renderParts), each on
 * one thread, and the parts joined without a second encode. An MP4's parts are H.264 (each
 * opening on a keyframe) with PCM audio in MOV files, joined by the concat demuxer with the
 * video copied and the audio encoded to AAC once over the whole summary: AAC parts would each
 * bring their own priming and a gap at each join. A GIF's parts use the summary's one palette
 * and are joined frame by frame (joinGifs).
 * MP4s are bit-exact for the same input, settings and thread count.
 */
export function buildSummaryArgs(o: SummaryRender): SummaryPlan {
  if (o.spec.format === 'gif') return gifPasses(o);
  const audio = o.audio !== undefined && !o.spec.removeAudio;
  const parts = renderParts(o);
  if (parts.length < 2 || !o.partsDir)
    return {
      steps: [
        [
          [
            ...mp4Render(o, audio),
            ...(o.audio && audio ? audioEncoderArgs(o.audio, 'aac') : []),
            ...mp4Output(o.outputPath),
          ],
        ],
      ],
      files: [],
    };
  const dir = o.partsDir;
  const list = join(dir, 'parts.txt');
  const names = parts.map((_, k) => `part${k}.mov`);
  return {
    steps: [
      parts.map((part, k) => [
        ...mp4Render(part, audio),
        ...(audio ? ['-c:a', 'pcm_s16le'] : []),
        '-f',
        'mov',
        '-y',
        join(dir, names[k] ?? ''),
      ]),
      [
        [
          ...partsListInput(list),
          ...common(o),
          '-map',
          '0:v',
          '-c:v',
          'copy',
          ...(o.audio && audio ? ['-map', '0:a', ...audioEncoderArgs(o.audio, 'aac')] : []),
          ...mp4Output(o.outputPath),
        ],
      ],
    ],
    // Names relative to the list's directory: the concat demuxer's safe mode takes them.
    files: [{ path: list, content: names.map((n) => `file '${n}'\n`).join('') }],
  };
}

/** An MP4 render's inputs, graph and video encoder, up to its audio codec. */
function mp4Render(o: SummaryRender, audio: boolean): string[] {
  // ultrafast with the deblocking filter back on: a preview of up to 30 s at source width must
  // cost a fraction of decoding the input. On 12 s of the benchmark's 720p clips (2 cores, CPU
  // seconds): ultrafast 1.6–1.9 s, 10.4 MB; with deblocking ≈ the same time (it keeps block
  // edges out of the picture); superfast 3.3–4.1 s, 7.8 MB; superfast without CABAC 2.7 s,
  // 8.9 MB. The MP4 job spent more on its encode than on its analysis (bench/summary-speed.ts).
  return [
    ...inputsOf(o),
    ...common(o),
    '-filter_complex',
    `${shownVideo(o, { audio })}[out]format=yuv420p[v]`,
    '-map',
    '[v]',
    ...(audio ? ['-map', '[a]'] : ['-an']),
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-x264-params',
    'deblock=0,0',
    '-crf',
    '23',
    ...BT709_OUTPUT_ARGS,
  ];
}

const mp4Output = (path: string): string[] => ['-movflags', '+faststart', '-f', 'mp4', '-y', path];

/**
 * An MP4 summary's loudness step (loudness.ts): its video copied, its audio through `loudness`
 * and encoded to AAC again, from `renderedPath` to the render's output path.
 */
export function summaryLoudnessArgs(
  o: SummaryRender,
  renderedPath: string,
  loudness: string,
): string[] {
  if (!o.audio) throw new Error('a loudness step for a summary without audio');
  return [
    ...inputArgs(renderedPath),
    ...common(o),
    ...['-map', '0:v', '-c:v', 'copy', '-map', '0:a'],
    ...['-af', audioFormatFilter(o.audio, 'aac', loudness), ...audioEncoderArgs(o.audio, 'aac')],
    ...mp4Output(o.outputPath),
  ];
}

/**
 * The render split into one part per thread (at most MAX_RENDER_PARTS, at most one per clip),
 * each a run of consecutive clips of about the same length, with the threads shared out; one
 * part, the render itself, without `partsDir` or with one thread.
 */
export function renderParts(o: SummaryRender): SummaryRender[] {
  const count = o.partsDir ? Math.min(o.threads, MAX_RENDER_PARTS, o.clips.length) : 1;
  if (count < 2) return [o];
  const total = o.clips.reduce((sum, c) => sum + c.durationSeconds, 0);
  // Each part takes the next clips while their middle falls in its share of the length, at
  // least one, and leaves at least one to each later part; the last takes the rest.
  const groups: Clip[][] = [];
  let i = 0;
  let before = 0;
  for (let k = 0; k < count; k++) {
    const group: Clip[] = [];
    const end = ((k + 1) / count) * total;
    for (let clip = o.clips[i]; clip; clip = o.clips[i]) {
      const last = k === count - 1;
      const late = before + clip.durationSeconds / 2 > end;
      if (group.length > 0 && !last && (late || o.clips.length - i <= count - k - 1)) break;
      group.push(clip);
      before += clip.durationSeconds;
      i++;
    }
    groups.push(group);
  }
  const threads = Math.max(1, Math.floor(o.threads / count));
  return groups.map((clips) => ({ ...o, clips, threads }));
}

/**
 * A GIF: its palette from the analysis's samples of the chosen segments (a fraction of a second,
 * see palette-samples.ts), then the render on that palette, in parts side by side like an MP4's
 * (see renderParts), joined frame by frame (joinGifs). The render holds a few frames whatever
 * the GIF's length and width (one pass with `palettegen` inside held every frame until the
 * last: 2.1 GB for 30 s of 720p). Bayer dither: the best size for the quality among
 * single-palette options, and the cheapest that dithers (docs/benchmarks.md, "Summary speed"); error
 * diffusion crawls between frames.
 */
function gifPasses(o: SummaryRender): SummaryPlan {
  const { palettePath, paletteSamples } = o;
  if (!palettePath || !paletteSamples)
    throw new Error('a GIF render needs its palette samples and a palette path');
  const use = 'paletteuse=dither=bayer:bayer_scale=5:diff_mode=rectangle[v]';
  const parts = renderParts(o);
  const partPaths =
    parts.length > 1 ? parts.map((_, k) => join(o.partsDir ?? '', `part${k}.gif`)) : undefined;
  const render = (part: SummaryRender, path: string): string[] => {
    const palette = part.clips.length + (part.watermark?.inputs.length ?? 0);
    return [
      ...inputsOf(part),
      ...inputArgs(palettePath),
      ...common(part),
      '-filter_complex',
      `${shownVideo(part, { audio: false })}[out][${palette}:v]${use}`,
      // -loop 0: the GIF plays forever.
      '-map',
      '[v]',
      '-loop',
      '0',
      '-f',
      'gif',
      '-y',
      path,
    ];
  };
  return {
    steps: [
      [
        [
          ...paletteFromSamplesArgs({
            samplesPath: paletteSamples.path,
            sampleSize: paletteSamples,
            size: o.size,
            ...(o.watermark ? { watermark: o.watermark } : {}),
            palettePath,
          }),
        ],
      ],
      parts.map((part, k) => render(part, partPaths?.[k] ?? o.outputPath)),
    ],
    files: [],
    ...(partPaths ? { gifParts: partPaths } : {}),
  };
}

/** The clips' inputs (one decoder thread each, see buildSummaryArgs), then the watermark's. */
function inputsOf(o: SummaryRender): string[] {
  return [...clipInputs(o).flat(), ...(o.watermark?.inputs.flatMap((i) => inputArgs(i)) ?? [])];
}

/** Where a clip starts in the input file: after the job's trim, if it has one. */
const start = (o: SummaryRender, c: Clip): number =>
  Math.round(((o.trim?.startSeconds ?? 0) + c.startSeconds) * 1e6) / 1e6;

/** One `-ss … -t … -i` input per clip. */
function clipInputs(o: SummaryRender): string[][] {
  const probing = o.describedByHeader ? ['-analyzeduration', '0', '-probesize', '32768'] : [];
  return o.clips.map((c) =>
    inputArgs(o.inputPath, [
      '-threads',
      '1',
      ...probing,
      // No seek for a clip from the start: FLV's demuxer, asked to seek to 0, starts a
      // sixth of a second late and then ends the clip early (a 2 s clip came out 0.33 s).
      ...(start(o, c) > 0 ? ['-ss', String(start(o, c))] : []),
      '-t',
      String(c.durationSeconds),
    ]),
  );
}

/**
 * What a summary is measured against (see measureQuality): the same clips read the same way and
 * made into pictures by the same filters (a GIF's frame rate, the size), joined in order,
 * without the watermark; so the reference's frames are the render's, frame for frame.
 */
export function summaryReference(o: SummaryRender): QualityReference {
  const video = o.picture.video.index;
  const picture = pictureFilters(o.picture, o.size, 'lanczos', frameRateOf(o));
  return {
    inputs: clipInputs(o),
    chain: (first) => {
      const clips = o.clips.map(
        (_, i) => `[${first + i}:${video}]setpts=PTS-STARTPTS,${picture}[qc${i}];`,
      );
      return `${clips.join('')}${o.clips.map((_, i) => `[qc${i}]`).join('')}concat=n=${o.clips.length}:v=1:a=0`;
    },
  };
}

/**
 * Why a GIF has no VMAF: the model scores compression artefacts, and a GIF's loss is its palette
 * and dither. On a 480-wide GIF of a noisy 720p clip it gave 99.7 where luma PSNR was 29.5 dB
 * and SSIM 0.94: a figure that says nothing, at the price of the most costly metric.
 */
export const GIF_NO_VMAF =
  'VMAF (vmaf_v0.6.1) scores compression artefacts, not a GIF palette and dither: it rates a GIF near 100 whatever its colours lost; PSNR and SSIM tell that loss';

/**
 * How a summary is measured beyond its reference: a GIF's frames put back on its frame rate's
 * grid before the comparison (its centisecond delays put some a little off it, which paired them
 * with a neighbouring reference frame: 22 dB where its neighbours had 40), and no VMAF.
 */
export function summaryQualityOptions(spec: SummarySpec): {
  outputFilter?: string;
  vmafNotApplicable?: string;
} {
  // Its RGB frames made into YUV with the matrix the reference has (swscale would take BT.601).
  const yuv = 'scale=out_color_matrix=bt709:out_range=tv,format=yuv420p';
  return spec.format === 'gif'
    ? { outputFilter: `fps=${GIF_FPS},${yuv}`, vmafNotApplicable: GIF_NO_VMAF }
    : {};
}

/** A GIF's frame rate filter, where its frames are dropped (before scaling them). */
const frameRateOf = (o: SummaryRender): string | undefined =>
  o.spec.format === 'gif' ? `fps=${GIF_FPS}` : undefined;

const common = (o: SummaryRender): string[] => [
  '-threads',
  String(o.threads),
  '-map_metadata',
  '-1',
  '-fflags',
  '+bitexact',
  '-flags',
  '+bitexact',
];

/**
 * The clips, each made into the output's pictures (deinterlaced, a GIF's frames dropped, tone
 * mapped, scaled: see pictureFilters), joined and watermarked, ending in the label `[out]` (and
 * the joined audio in `[a]` when asked). A GIF drops frames before it scales them: half the
 * scaling work at 25 fps.
 */
function shownVideo(o: SummaryRender, w: { audio: boolean }): string {
  const n = o.clips.length;
  const video = o.picture.video.index;
  const picture = pictureFilters(o.picture, o.size, 'lanczos', frameRateOf(o));
  // A seek between two frames gives the clip's first frame a small positive time; the output
  // would fill the gap by showing that frame twice (a frozen frame at the join).
  const starts = o.clips
    .map((_, i) => `[${i}:${video}]setpts=PTS-STARTPTS,${picture}[c${i}];`)
    .join('');
  const audio = w.audio && o.audio ? o.audio : undefined;
  const parts = o.clips.map((_, i) => `[c${i}]${audio ? `[${i}:${audio.index}]` : ''}`).join('');
  const joined = o.watermark ? '[in]' : '[out]';
  const joinedAudio = audio ? `[ca];[ca]${audioFormatFilter(audio, 'aac')}[a]` : '';
  const watermark = o.watermark ? `${o.watermark.filter(n)};` : '';
  return `${starts}${parts}concat=n=${n}:v=1:a=${audio ? 1 : 0}${joined}${joinedAudio};${watermark}`;
}

const round = (n: number): number => Math.round(n * 1000) / 1000;
