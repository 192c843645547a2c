import { execFile, spawn, type ExecFileException } from 'node:child_process';
import { createInterface } from 'node:readline';
import { MediaError } from '../errors.ts';
import {
  boundedCommand,
  looksOutOfMemory,
  stoppedFromOutside,
  type CommandBounds,
} from './bounded-command.ts';
import { readMediaInfo, type MediaInfo, type PacketSpan, type ProbeJson } from './media-info.ts';
import { INPUT_FORMATS, PROTOCOLS } from './run-ffmpeg.ts';

export type { MediaInfo } from './media-info.ts';

export type Prober = (path: string, options?: { countPackets?: boolean }) => Promise<MediaInfo>;

/** Longest a probe may run, ms (a packet scan reads the whole file, without decoding it). */
const PROBE_TIMEOUT_MS = 120_000;

/**
 * ffprobe with the same demuxer and protocol allow-lists and the same bounds as ffmpeg, read
 * into the media model. A file that declares no length anywhere (a browser's MediaRecorder
 * WebM) gets a second ffprobe that reads its video packets (no decoding) to measure it.
 */
export function createProber(ffprobePath: string, bounds: CommandBounds): Prober {
  return async (path, options = {}) => {
    const args = [
      ...['-print_format', 'json', '-show_format', '-show_streams'],
      ...(options.countPackets ? ['-count_packets'] : []),
    ];
    const stdout = await ffprobe(ffprobePath, bounds, [...args, path]);
    let json: ProbeJson;
    try {
      json = JSON.parse(stdout) as ProbeJson;
    } catch (cause) {
      throw new MediaError('input_unsupported', 'the input is not a readable video', { cause });
    }
    const info = readMediaInfo(json);
    if (info.durationSource !== 'none' || !info.video) return info;
    return readMediaInfo(json, await scanPackets(ffprobePath, bounds, path, info.video.index));
  };
}

function ffprobe(ffprobePath: string, bounds: CommandBounds, args: string[]): Promise<string> {
  const [command, commandArgs] = boundedCommand(ffprobePath, [...commonArgs(), ...args], bounds);
  return new Promise((resolve, reject) => {
    execFile(
      command,
      commandArgs,
      { maxBuffer: 4 * 1024 * 1024, timeout: PROBE_TIMEOUT_MS },
      (error, stdout, stderr) => {
        // ffprobe's stderr names the local path; it goes to the log through the cause only.
        if (error) reject(probeFailure(error, stderr, bounds));
        else resolve(stdout);
      },
    );
  });
}

const commonArgs = (): string[] => [
  '-v',
  'error',
  '-format_whitelist',
  INPUT_FORMATS,
  '-protocol_whitelist',
  PROTOCOLS,
];

/** Longest gap between two packets taken as the stream's own time; longer ones are restarts or jumps. */
const MAX_PACKET_GAP_SECONDS = 1;

/**
 * The length of a stream from its packets' decode times, read line by line (memory stays flat
 * whatever the file's length): the sum of the steps between packets, where a step backwards or
 * a jump (timestamps that restart or skip) counts as one ordinary frame.
 */
async function scanPackets(
  ffprobePath: string,
  bounds: CommandBounds,
  path: string,
  streamIndex: number,
): Promise<PacketSpan> {
  let total = 0;
  let previous: number | undefined;
  let step = 0;
  const code = await forEachPacket(ffprobePath, bounds, path, String(streamIndex), (packet) => {
    const time = Number.isFinite(packet.dts) ? packet.dts : packet.pts;
    if (!Number.isFinite(time)) return;
    if (packet.duration > 0 && packet.duration <= MAX_PACKET_GAP_SECONDS) step = packet.duration;
    if (previous !== undefined) {
      const delta = time - previous;
      if (delta > 0 && delta <= MAX_PACKET_GAP_SECONDS) {
        total += delta;
        step = step || delta;
      } else total += step;
    }
    previous = time;
  });
  if (code !== 0 && total === 0)
    throw new MediaError('input_unsupported', 'the input is not a readable video');
  return { durationSeconds: Math.round((total + step) * 1000) / 1000 };
}

/** The delivered bitrate of a file's first video stream, kb/s (see createVideoRateReader). */
export type VideoRateReader = (path: string) => Promise<number>;

/**
 * Reads what a file's first video stream spends: its packets' bits over the stream's length
 * (first presentation time to the last packet's end), the rate a caller asked for with
 * `bitrateKbps`. For the service's own outputs (a file with timestamps that jump would be
 * measured short). Rejects when the stream has no packets.
 */
export function createVideoRateReader(ffprobePath: string, bounds: CommandBounds): VideoRateReader {
  return async (path) => {
    let bytes = 0;
    let first = Infinity;
    let end = -Infinity;
    await forEachPacket(ffprobePath, bounds, path, 'v:0', (packet) => {
      if (!Number.isFinite(packet.size) || !Number.isFinite(packet.pts)) return;
      bytes += packet.size;
      first = Math.min(first, packet.pts);
      end = Math.max(end, packet.pts + (Number.isFinite(packet.duration) ? packet.duration : 0));
    });
    if (!(end > first)) throw new Error('the output has no video packets to measure');
    return (bytes * 8) / 1000 / (end - first);
  };
}

interface PacketLine {
  pts: number;
  dts: number;
  duration: number;
  size: number;
}

/**
 * Calls `onPacket` for each packet of the selected stream as ffprobe prints it (no decoding),
 * line by line, so memory stays flat whatever the file's length; resolves with ffprobe's exit
 * code (a file cut short still yields the packets before the cut).
 */
async function forEachPacket(
  ffprobePath: string,
  bounds: CommandBounds,
  path: string,
  stream: string,
  onPacket: (packet: PacketLine) => void,
): Promise<number | null> {
  const args = [
    ...commonArgs(),
    '-select_streams',
    stream,
    '-show_entries',
    'packet=dts_time,pts_time,duration_time,size',
    '-print_format',
    'csv=p=0',
    path,
  ];
  const [command, commandArgs] = boundedCommand(ffprobePath, args, bounds);
  const child = spawn(command, commandArgs, { stdio: ['ignore', 'pipe', 'ignore'] });
  const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  try {
    for await (const line of createInterface({ input: child.stdout })) {
      // ffprobe prints a packet's fields in its own order: pts, dts, duration, size.
      const [pts, dts, duration, size] = line.split(',').map((v) => Number.parseFloat(v));
      onPacket({ pts: pts ?? NaN, dts: dts ?? NaN, duration: duration ?? NaN, size: size ?? NaN });
    }
  } finally {
    clearTimeout(timer);
  }
  return exited;
}

function probeFailure(error: ExecFileException, stderr: string, bounds: CommandBounds): MediaError {
  // `killed`: execFile's own time-out stopped it, a signal the service sent.
  const stopped = error.killed ? undefined : stoppedFromOutside('ffprobe', null, error.signal);
  if (stopped) return stopped;
  const cause = new Error(`ffprobe failed: ${stderr.trim() || error.message}`, { cause: error });
  if (looksOutOfMemory(stderr))
    return new MediaError(
      'memory_limit_exceeded',
      `reading the input needed more memory than the limit of ${bounds.memoryLimitBytes} bytes`,
      { cause },
    );
  return new MediaError('input_unsupported', 'the input is not a readable video', { cause });
}
