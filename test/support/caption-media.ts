import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const FFMPEG = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
const FFPROBE = process.env['TEST_FFPROBE'] ?? 'ffprobe';

/** Two cues, as a subtitle editor writes SubRip (CRLF, comma milliseconds). */
export const SRT =
  '1\r\n00:00:01,000 --> 00:00:02,000\r\nHello\r\n\r\n2\r\n00:00:03,000 --> 00:00:03,500\r\nWorld\r\n';
/** The same cues as WebVTT. */
export const VTT = 'WEBVTT\n\n00:01.000 --> 00:02.000\nHello\n\n00:03.000 --> 00:03.500\nWorld\n';

const VIDEO = ['-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25:duration=4'];
const X264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];

async function ffmpeg(args: string[]): Promise<void> {
  await run(FFMPEG, ['-hide_banner', '-loglevel', 'error', ...args, '-y'], {
    maxBuffer: 16 << 20,
  });
}

/**
 * The inputs of the captions tests, written to `dir`: an MP4 with a mov_text track tagged
 * `eng`, an MKV with a SubRip (`fre`) and an ASS (`ger`) track, the same MKV as a live recorder
 * writes it (to a pipe: no length, no index, so its timeline is rebuilt first), a WebM with a
 * WebVTT track, and a flat picture of 320×240 without subtitles (a burned-in caption shows
 * plainly on it).
 */
export async function writeCaptionInputs(dir: string): Promise<void> {
  const srt = join(dir, 'cues.srt');
  await writeFile(srt, SRT);
  const sub = ['-i', srt, '-map', '0:v', '-map', '1:s'];
  await ffmpeg([
    ...VIDEO,
    ...sub,
    ...X264,
    '-c:s',
    'mov_text',
    ...lang(0, 'eng'),
    join(dir, 'with-subs.mp4'),
  ]);
  const mkv = [
    ...VIDEO,
    ...[...sub, '-map', '1:s'],
    ...X264,
    ...['-c:s:0', 'subrip', '-c:s:1', 'ass', ...lang(0, 'fre'), ...lang(1, 'ger')],
  ];
  await ffmpeg([...mkv, join(dir, 'with-subs.mkv')]);
  const piped = await run(
    FFMPEG,
    ['-hide_banner', '-loglevel', 'error', ...mkv, '-f', 'matroska', 'pipe:1'],
    { encoding: 'buffer', maxBuffer: 16 << 20 },
  );
  await writeFile(join(dir, 'with-subs-unindexed.mkv'), piped.stdout);
  await ffmpeg([
    ...VIDEO,
    ...sub,
    ...['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '300k'],
    ...['-c:s', 'webvtt', ...lang(0, 'spa'), join(dir, 'with-subs.webm')],
  ]);
  await ffmpeg([
    ...['-f', 'lavfi', '-i', 'color=c=0x305090:size=320x240:rate=25:duration=4'],
    ...[...X264, join(dir, 'flat.mp4')],
  ]);
}

const lang = (k: number, language: string): string[] => [
  `-metadata:s:s:${k}`,
  `language=${language}`,
];

/** A subtitle stream of a file as ffprobe reads it. */
export interface ProbedSubtitle {
  codec: string;
  language?: string;
  /** The title tag (Matroska), else the handler name (MP4). */
  label?: string;
}

export async function subtitleStreams(path: string): Promise<ProbedSubtitle[]> {
  const { stdout } = await run(FFPROBE, [
    ...['-v', 'error', '-select_streams', 's', '-show_entries', 'stream=codec_name:stream_tags'],
    ...['-of', 'json', path],
  ]);
  const { streams = [] } = JSON.parse(stdout) as {
    streams?: { codec_name: string; tags?: Record<string, string> }[];
  };
  return streams.map((s) => {
    const label = s.tags?.['title'] ?? s.tags?.['handler_name'];
    return {
      codec: s.codec_name,
      ...(s.tags?.['language'] ? { language: s.tags['language'] } : {}),
      ...(label ? { label } : {}),
    };
  });
}

/**
 * An MP4's WebVTT (`wvtt`) tracks as ffprobe reads them: data streams of no codec it knows, each
 * with its language tag and handler name.
 */
export async function probedWvttStreams(
  path: string,
): Promise<{ type: string; tag: string; language?: string; handler?: string }[]> {
  const { stdout } = await run(FFPROBE, [
    ...['-v', 'error', '-show_entries', 'stream=codec_type,codec_tag_string:stream_tags'],
    ...['-of', 'json', path],
  ]);
  const { streams = [] } = JSON.parse(stdout) as {
    streams?: { codec_type: string; codec_tag_string: string; tags?: Record<string, string> }[];
  };
  return streams
    .filter((s) => s.codec_tag_string === 'wvtt')
    .map((s) => ({
      type: s.codec_type,
      tag: s.codec_tag_string,
      ...(s.tags?.['language'] ? { language: s.tags['language'] } : {}),
      ...(s.tags?.['handler_name'] ? { handler: s.tags['handler_name'] } : {}),
    }));
}

/** The cues of a file's `k`-th subtitle stream: [start, end] seconds and text, read by ffmpeg. */
export async function cuesOf(path: string, k: number): Promise<[number, number, string][]> {
  const { stdout } = await run(FFMPEG, [
    ...['-v', 'error', '-i', path, '-map', `0:s:${k}`, '-c:s', 'webvtt', '-f', 'webvtt', '-'],
  ]);
  const seconds = (t: string): number =>
    t.split(':').reduce((sum, part) => sum * 60 + Number(part), 0);
  return [...stdout.matchAll(/^([\d:.]+) --> ([\d:.]+).*\n(.+)$/gm)].map((m) => [
    seconds(m[1] ?? ''),
    seconds(m[2] ?? ''),
    m[3] ?? '',
  ]);
}

/** The luma plane of the frame shown at `seconds`, full size. */
export async function lumaAt(path: string, seconds: number): Promise<Buffer> {
  const { stdout } = await run(
    FFMPEG,
    [
      ...['-v', 'error', '-i', path, '-map', '0:v:0', '-vf', `select=gte(t\\,${seconds})`],
      ...['-frames:v', '1', '-pix_fmt', 'gray', '-f', 'rawvideo', '-'],
    ],
    { encoding: 'buffer', maxBuffer: 16 << 20 },
  );
  return stdout;
}

/**
 * Rows of two frames `width` pixels wide where some pixel's luma differs by more than `threshold`
 * (encoding noise on a flat picture stays well below): the first and last such row, if any.
 */
export function changedRows(
  a: Buffer,
  b: Buffer,
  width: number,
  threshold = 48,
): { first: number; last: number } | undefined {
  let first = -1;
  let last = -1;
  for (let row = 0; row * width < a.length; row++) {
    for (let x = 0; x < width; x++) {
      const i = row * width + x;
      if (Math.abs((a[i] ?? 0) - (b[i] ?? 0)) <= threshold) continue;
      if (first < 0) first = row;
      last = row;
      break;
    }
  }
  return first < 0 ? undefined : { first, last };
}
