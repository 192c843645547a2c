// Which frame of an input a frame of an output is: each frame made small and grey and compared
// byte by byte with the input's frames around where it should be (testsrc2 moves every frame, so
// neighbours differ far more than an encode's loss). For trimming tests (issue 30).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ffmpeg = (): string => process.env['TEST_FFMPEG'] ?? 'ffmpeg';
const ffprobe = (): string => process.env['TEST_FFPROBE'] ?? 'ffprobe';
const SIZE = '64x36';

/** Frame `index` (0-based, in decode order of the first video stream) as 64×36 grey bytes. */
export async function frameBytes(path: string, index: number): Promise<Buffer> {
  const { stdout } = await run(
    ffmpeg(),
    [
      ...['-v', 'error', '-i', path, '-map', '0:v:0'],
      ...['-vf', `select=eq(n\\,${index}),scale=${SIZE}:flags=area,format=gray`],
      ...['-frames:v', '1', '-f', 'rawvideo', '-'],
    ],
    { encoding: 'buffer', maxBuffer: 1 << 20 },
  );
  if (stdout.length === 0) throw new Error(`${path} has no frame ${index}`);
  return stdout;
}

/** Frames of the first video stream, counted by decoding. */
export async function frameCount(path: string): Promise<number> {
  const { stdout } = await run(ffprobe(), [
    ...['-v', 'error', '-select_streams', 'v:0', '-count_frames'],
    ...['-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', path],
  ]);
  return Number(stdout.trim());
}

/**
 * Where a stream (`v:0`, `a:0`) starts and ends by its packets, seconds, from ffprobe. A packet
 * without a duration (audio in fragmented MP4) lasts as long as the gap before it.
 */
export async function streamSpan(path: string, stream: string): Promise<[number, number]> {
  const { stdout } = await run(ffprobe(), [
    ...['-v', 'error', '-select_streams', stream, '-show_entries'],
    ...['packet=pts_time,duration_time', '-of', 'csv=p=0', path],
  ]);
  const packets = stdout
    .trim()
    .split('\n')
    .map((line) => line.split(',').map(Number))
    .sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0));
  const ends = packets.map(([pts = 0, duration = NaN], k) => {
    const gap = pts - (packets[k - 1]?.[0] ?? pts);
    return pts + (Number.isFinite(duration) ? duration : gap);
  });
  return [packets[0]?.[0] ?? 0, Math.max(...ends)];
}

/**
 * The index among `candidates` of the input frame that `output` is: the one with the least mean
 * absolute difference, with the differences for the message.
 */
export async function closestFrame(
  input: string,
  candidates: readonly number[],
  output: Buffer,
): Promise<{ index: number; differences: Record<number, number> }> {
  const differences: Record<number, number> = {};
  for (const k of candidates) {
    const frame = await frameBytes(input, k);
    let sum = 0;
    for (let i = 0; i < frame.length; i++) sum += Math.abs((frame[i] ?? 0) - (output[i] ?? 0));
    differences[k] = Math.round((sum / frame.length) * 100) / 100;
  }
  const index = candidates.reduce((best, k) =>
    (differences[k] ?? Infinity) < (differences[best] ?? Infinity) ? k : best,
  );
  return { index, differences };
}
