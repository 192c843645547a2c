import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const FFMPEG = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
const FFPROBE = process.env['TEST_FFPROBE'] ?? 'ffprobe';
const BIG = { maxBuffer: 64 * 1024 * 1024 };

/** The part of `ffprobe -show_format -show_streams` JSON the checks read. */
export interface ProbedStream {
  index: number;
  codec_type: string;
  codec_name?: string;
  profile?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  sample_aspect_ratio?: string;
  field_order?: string;
  color_range?: string;
  color_space?: string;
  color_transfer?: string;
  color_primaries?: string;
  start_time?: string;
  duration?: string;
  channels?: number;
  channel_layout?: string;
  sample_rate?: string;
  r_frame_rate?: string;
  disposition?: Record<string, number>;
  tags?: Record<string, string>;
  side_data_list?: { side_data_type?: string; rotation?: number }[];
}

export interface Probed {
  format: {
    format_name: string;
    duration?: string;
    start_time?: string;
    size?: string;
    tags?: Record<string, string>;
  };
  streams: ProbedStream[];
}

export async function probe(path: string): Promise<Probed> {
  const { stdout } = await run(
    FFPROBE,
    ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', path],
    BIG,
  );
  return JSON.parse(stdout) as Probed;
}

/** The picture stream: the first video stream that is not cover art. */
export function videoStream(probed: Probed): ProbedStream | undefined {
  return probed.streams.find((s) => s.codec_type === 'video' && !s.disposition?.['attached_pic']);
}

export function audioStreams(probed: Probed): ProbedStream[] {
  return probed.streams.filter((s) => s.codec_type === 'audio');
}

/**
 * Clockwise display rotation a stream asks for. ffprobe prints a display matrix's angle
 * counterclockwise (a phone's portrait 90° clockwise shows as -90); an old `rotate` tag is
 * clockwise.
 */
export function clockwiseRotation(stream: ProbedStream): number {
  const matrix = stream.side_data_list?.find((d) => typeof d.rotation === 'number');
  const degrees =
    matrix?.rotation !== undefined ? -matrix.rotation : Number(stream.tags?.['rotate'] ?? 0);
  return (((Math.round(degrees / 90) * 90) % 360) + 360) % 360;
}

/** Width:height of one sample (pixel); 1 when absent, unknown (0:1) or malformed. */
export function sampleAspect(stream: ProbedStream): number {
  const [num, den] = (stream.sample_aspect_ratio ?? '1:1').split(':').map(Number);
  return num && den ? num / den : 1;
}

/** What a viewer sees: the stored size with the sample aspect ratio and the rotation applied. */
export function displayedSize(probed: Probed): { width: number; height: number } {
  const video = videoStream(probed);
  if (!video?.width || !video.height) throw new Error('no video stream with a size');
  const width = Math.round(video.width * sampleAspect(video));
  const turned = clockwiseRotation(video) % 180 !== 0;
  return turned ? { width: video.height, height: width } : { width, height: video.height };
}

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

export interface Corners {
  topLeft: Rgb;
  topRight: Rgb;
  bottomLeft: Rgb;
  bottomRight: Rgb;
}

/** The marker of the corpus: red and not much else (a mean over a corner region). */
export function isRed(c: Rgb): boolean {
  return c.r >= 120 && c.r >= 2 * c.g && c.r >= 2 * c.b;
}

const GRID = 20;
/** Corner regions of 3/20 of each side: inside the marker box (1/5) with room for scaling. */
const CELLS = 3;

/**
 * Mean colour of each corner of the picture shown at `atSeconds` (default 0.3; ffmpeg turns
 * frames upright), from the picture (after `filter`) squeezed to 20×20 pixels of rgb24; the
 * first frame when the file is shorter than that.
 */
export async function cornerColours(
  path: string,
  o: { atSeconds?: number; filter?: string } = {},
): Promise<Corners> {
  const filter = `${o.filter ? `${o.filter},` : ''}scale=${GRID}:${GRID}:flags=area`;
  let pixels = await frameGrid(path, o.atSeconds ?? 0.3, filter);
  if (pixels.length < GRID * GRID * 3) pixels = await frameGrid(path, 0, filter);
  if (pixels.length < GRID * GRID * 3) throw new Error(`no frame decoded from ${path}`);
  const mean = (x0: number, y0: number): Rgb => {
    const sum = { r: 0, g: 0, b: 0 };
    for (let y = y0; y < y0 + CELLS; y++)
      for (let x = x0; x < x0 + CELLS; x++) {
        const at = (y * GRID + x) * 3;
        sum.r += pixels[at] ?? 0;
        sum.g += pixels[at + 1] ?? 0;
        sum.b += pixels[at + 2] ?? 0;
      }
    const n = CELLS * CELLS;
    return { r: Math.round(sum.r / n), g: Math.round(sum.g / n), b: Math.round(sum.b / n) };
  };
  const far = GRID - CELLS;
  return {
    topLeft: mean(0, 0),
    topRight: mean(far, 0),
    bottomLeft: mean(0, far),
    bottomRight: mean(far, far),
  };
}

async function frameGrid(path: string, atSeconds: number, filter: string): Promise<Buffer> {
  const { stdout } = await run(
    FFMPEG,
    [
      ...['-v', 'error', ...(atSeconds > 0 ? ['-ss', String(atSeconds)] : []), '-i', path],
      ...['-frames:v', '1', '-vf', filter],
      ...['-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'],
    ],
    { encoding: 'buffer', ...BIG },
  );
  return stdout;
}

/**
 * The red marker is in the top-left corner of the picture shown, and only there. `filter` goes
 * before the sampling (e.g. a conversion of HDR to SDR: raw PQ pixels do not read as red).
 */
export async function markerTopLeft(
  path: string,
  filter?: string,
): Promise<{ ok: boolean; corners: Corners }> {
  const corners = await cornerColours(path, filter ? { filter } : {});
  return { ok: onlyTopLeftRed(corners), corners };
}

/** The corpus's marker where it belongs: the top-left corner red, no other. */
export function onlyTopLeftRed(corners: Corners): boolean {
  return (
    isRed(corners.topLeft) &&
    !isRed(corners.topRight) &&
    !isRed(corners.bottomLeft) &&
    !isRed(corners.bottomRight)
  );
}

/** Mean over all frames of signalstats' YAVG (mean luma, 8-bit scale) and SATAVG (saturation). */
export async function pictureStats(path: string): Promise<{ luma: number; saturation: number }> {
  const { stdout } = await run(
    FFMPEG,
    [
      ...['-v', 'error', '-i', path, '-an', '-vf'],
      'signalstats,metadata=print:file=-',
      ...['-f', 'null', '-'],
    ],
    BIG,
  );
  const mean = (key: string): number => {
    const values = [...stdout.matchAll(new RegExp(`signalstats\\.${key}=([\\d.]+)`, 'g'))].map(
      (m) => Number(m[1]),
    );
    if (values.length === 0) throw new Error(`signalstats gave no ${key} for ${path}`);
    return values.reduce((a, b) => a + b, 0) / values.length;
  };
  return { luma: mean('YAVG'), saturation: mean('SATAVG') };
}

export async function meanLuma(path: string): Promise<number> {
  return (await pictureStats(path)).luma;
}

/**
 * What `ffmpeg -v error -i path -f null -` writes on stderr when decoding the whole file
 * (every stream); '' for a clean decode. A non-zero exit is reported in the text too.
 */
export async function decodeErrors(path: string): Promise<string> {
  try {
    const { stderr } = await run(FFMPEG, ['-v', 'error', '-i', path, '-f', 'null', '-'], BIG);
    return stderr.trim();
  } catch (error) {
    const e = error as { code?: number; stderr?: string };
    return `exit ${e.code ?? '?'}: ${e.stderr?.trim() ?? ''}`;
  }
}

export async function decodesCleanly(path: string): Promise<boolean> {
  return (await decodeErrors(path)) === '';
}

export interface InterlaceVerdict {
  tff: number;
  bff: number;
  progressive: number;
  undetermined: number;
}

/** idet's multi-frame counts over the whole video. */
export async function interlaceVerdict(path: string): Promise<InterlaceVerdict> {
  const { stderr } = await run(
    FFMPEG,
    ['-hide_banner', '-nostats', '-i', path, '-an', '-vf', 'idet', '-f', 'null', '-'],
    BIG,
  );
  const m =
    /Multi frame detection: TFF:\s*(\d+) BFF:\s*(\d+) Progressive:\s*(\d+) Undetermined:\s*(\d+)/.exec(
      stderr,
    );
  if (!m) throw new Error(`idet printed no verdict for ${path}`);
  const [, tff, bff, progressive, undetermined] = m.map(Number);
  return {
    tff: tff ?? 0,
    bff: bff ?? 0,
    progressive: progressive ?? 0,
    undetermined: undetermined ?? 0,
  };
}

export interface StreamTimes {
  start: number;
  end: number;
}

/**
 * First and last presentation time (end = last packet's pts + duration) of the first video and
 * the first audio stream, from the packets kept (WebM and GIF headers carry no stream
 * durations).
 */
export async function streamTimes(
  path: string,
): Promise<{ video?: StreamTimes; audio?: StreamTimes }> {
  const probed = await probe(path);
  const out: { video?: StreamTimes; audio?: StreamTimes } = {};
  const video = videoStream(probed);
  const audio = audioStreams(probed)[0];
  if (video) out.video = await packetSpan(path, video.index);
  if (audio) out.audio = await packetSpan(path, audio.index);
  return out;
}

async function packetSpan(path: string, index: number): Promise<StreamTimes> {
  const { stdout } = await run(
    FFPROBE,
    [
      ...['-v', 'error', '-select_streams', String(index)],
      ...['-show_entries', 'packet=pts_time,duration_time,flags', '-of', 'csv=p=0', path],
    ],
    BIG,
  );
  let start = Infinity;
  let end = -Infinity;
  for (const line of stdout.split('\n')) {
    const [pts, duration, flags] = line.split(',');
    // D: a packet the demuxer discards (an AAC encoder's priming, cut by the MP4 edit list).
    if (!pts || pts === 'N/A' || flags?.includes('D')) continue;
    start = Math.min(start, Number(pts));
    end = Math.max(end, Number(pts) + (Number(duration) || 0));
  }
  if (!Number.isFinite(start)) throw new Error(`no packets with a time in stream ${index}`);
  return { start, end };
}

/**
 * Time of the first decoded frame of the first video and the first audio stream: where a
 * player starts each, after the decoder's own delay (a WMA decoder drops its first frame) and
 * an MP4 edit list; packet times (streamTimes) count neither.
 */
export async function firstFrameTimes(path: string): Promise<{ video?: number; audio?: number }> {
  const probed = await probe(path);
  const first = async (stream?: ProbedStream): Promise<number | undefined> => {
    if (!stream) return undefined;
    const { stdout } = await run(FFPROBE, [
      ...['-v', 'error', '-select_streams', String(stream.index), '-read_intervals', '%+#10'],
      ...['-show_entries', 'frame=pts_time', '-of', 'csv=p=0', path],
    ]);
    const times = stdout
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => Number(line.split(',')[0]))
      .filter(Number.isFinite);
    return times.length ? Math.min(...times) : undefined;
  };
  const out: { video?: number; audio?: number } = {};
  const video = await first(videoStream(probed));
  const audio = await first(audioStreams(probed)[0]);
  if (video !== undefined) out.video = video;
  if (audio !== undefined) out.audio = audio;
  return out;
}
