import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What a generated clip holds: its length and size, a sine tone, noise, the container. */
export interface ClipOptions {
  seconds: number;
  width: number;
  height: number;
  audio?: boolean;
  /** Temporal noise: the encode costs about as much as a camera's would. */
  noise?: boolean;
  /** ffmpeg's muxer name; default mp4. */
  format?: string;
}

/** A test clip from ffmpeg's lavfi sources (no binaries in the repository). */
export async function generateClip(path: string, o: ClipOptions): Promise<void> {
  const video = `testsrc2=size=${o.width}x${o.height}:rate=25:duration=${o.seconds}${o.noise ? ',noise=alls=5:allf=t' : ''}`;
  const args = ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', video];
  if (o.audio) args.push('-f', 'lavfi', '-i', `sine=frequency=440:duration=${o.seconds}`);
  args.push('-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p');
  if (o.audio) args.push('-c:a', 'aac', '-shortest');
  args.push('-f', o.format ?? 'mp4', '-y', path);
  await run(process.env['TEST_FFMPEG'] ?? 'ffmpeg', args);
}

export interface Probed {
  format: { format_name: string; duration: string; size: string };
  streams: {
    codec_type: string;
    codec_name: string;
    codec_tag_string: string;
    width?: number;
    height?: number;
    pix_fmt?: string;
  }[];
}

export async function ffprobe(path: string): Promise<Probed> {
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-print_format',
    'json',
    '-show_format',
    '-show_streams',
    path,
  ]);
  return JSON.parse(stdout) as Probed;
}

/**
 * The log lines an ffmpeg detection filter (freezedetect, blackdetect, …) writes about a file's
 * video, those holding `key`; ffmpeg from TEST_FFMPEG (the test services' build) or PATH.
 */
export async function detect(path: string, filter: string, key: string): Promise<string[]> {
  const ffmpeg = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
  const args = ['-hide_banner', '-nostats', '-i', path, '-vf', filter, '-an', '-f', 'null', '-'];
  const { stderr } = await run(ffmpeg, args);
  return stderr.split('\n').filter((l) => l.includes(key));
}

/** A still image of one colour made by ffmpeg: `.png`, `.jpg` or `.webp` (by the path's extension). */
export async function generateImage(
  path: string,
  o: { width: number; height: number; color?: string; extra?: string[] },
): Promise<void> {
  await run(process.env['TEST_FFMPEG'] ?? 'ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-f', 'lavfi'],
    ...['-i', `color=${o.color ?? 'red'}:size=${o.width}x${o.height}`],
    ...['-frames:v', '1', ...(o.extra ?? []), '-y', path],
  ]);
}
