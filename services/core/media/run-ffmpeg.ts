// Hand-written rather than fluent-ffmpeg & co.: it must bound memory and time, restrict demuxers
// and protocols, read -progress output and kill the child on abort, which wrappers leave out.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { MediaError } from '../errors.ts';
import { processCpuMs } from '../observability/process-cpu.ts';
import {
  boundedCommand,
  looksOutOfMemory,
  stoppedFromOutside,
  type CommandBounds,
} from './bounded-command.ts';

/** Demuxers an input may be opened with: video containers only, never playlists (HLS, concat). */
export const INPUT_FORMATS =
  'mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,flv,mpegts,mpeg,ogg,asf,image2,png_pipe,jpeg_pipe,webp_pipe,gif';
/** Protocols ffmpeg may use: local files and pipes; it never fetches anything itself. */
export const PROTOCOLS = 'file,pipe';

/**
 * An ffmpeg without progress for the stall timeout that used at least this share of a core
 * meanwhile is working, not stalled (see watchStall).
 */
const STALL_CPU_SHARE = 0.05;

export interface FfmpegProgress {
  /** Seconds of output written so far. */
  outTimeSeconds: number;
  /** Encoding speed relative to realtime, when ffmpeg reports it. */
  speed?: number;
}

export interface RunFfmpegOptions {
  signal: AbortSignal;
  /** Kill ffmpeg when no progress line arrives for this long (ms). */
  stallTimeoutMs: number;
  onProgress?: (progress: FfmpegProgress) => void;
  /**
   * Receives ffmpeg's stdout (an output written to `pipe:1`), chunk by chunk as it arrives;
   * progress then moves to fd 3. Called synchronously, so a consumer that does its work in the
   * call holds at most one chunk (pipes carry 64 KiB), whatever the length of the output.
   */
  onStdout?: (chunk: Buffer) => void;
}

/** Runs ffmpeg (argument array, never a shell) and resolves when it exits cleanly. */
export type FfmpegRunner = (args: readonly string[], options: RunFfmpegOptions) => Promise<void>;

/**
 * ffmpeg with `-progress pipe:1` (`pipe:3` when onStdout takes stdout): progress blocks, errors on stderr (last 4 KiB kept
 * for the log, never for the caller: it names local paths). Bounded in memory and killed with
 * its worker (see boundedCommand); killed on abort or stall; never left running.
 */
export function createFfmpegRunner(ffmpegPath: string, bounds: CommandBounds): FfmpegRunner {
  return (args, { signal, stallTimeoutMs, onProgress, onStdout }) =>
    new Promise((resolve, reject) => {
      if (signal.aborted) return reject(new MediaError('interrupted', 'the job was stopped'));
      const { child, progress } = spawnFfmpeg(ffmpegPath, bounds, args, onStdout !== undefined);
      const stall = watchStall(child, stallTimeoutMs);
      const onAbort = (): void => void child.kill('SIGKILL');
      signal.addEventListener('abort', onAbort, { once: true });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString('utf8')).slice(-4096);
      });
      const consumer = onStdout ? forwardStdout(child, onStdout) : undefined;
      readProgress(progress, (report) => {
        stall.rearm();
        if (report) onProgress?.(report);
      });
      const finish = (): void => {
        stall.stop();
        signal.removeEventListener('abort', onAbort);
      };
      child.on('error', (error) => {
        finish();
        reject(new MediaError('internal', 'ffmpeg could not start', { cause: error }));
      });
      child.on('close', (code, exitSignal) => {
        finish();
        const failure = consumer?.error() ?? runFailure(code, exitSignal, stderr);
        if (failure) reject(failure);
        else resolve();
      });
      /** Why the run failed, or undefined when it exited cleanly. */
      function runFailure(
        code: number | null,
        exitSignal: NodeJS.Signals | null,
        err: string,
      ): Error | undefined {
        if (code === 0) return undefined;
        if (signal.aborted) return new MediaError('interrupted', 'the job was stopped');
        if (stall.stalled())
          return new MediaError('job_timeout', `ffmpeg made no progress for ${stallTimeoutMs} ms`);
        return stoppedFromOutside('ffmpeg', code, exitSignal) ?? ffmpegFailure(code, err, bounds);
      }
    });
}

/** The bounded ffmpeg child of one run, and the stream its progress blocks come on. */
function spawnFfmpeg(
  ffmpegPath: string,
  bounds: CommandBounds,
  args: readonly string[],
  takesStdout: boolean,
): { child: ChildProcess; progress: Readable } {
  const progressFd = takesStdout ? 3 : 1;
  const [command, commandArgs] = boundedCommand(
    ffmpegPath,
    [
      ...['-hide_banner', '-nostdin', '-nostats', '-loglevel', 'error'],
      ...['-progress', `pipe:${progressFd}`, ...args],
    ],
    bounds,
  );
  // setpriv and prlimit exec without closing descriptors, so fd 3 reaches ffmpeg.
  const child = spawn(command, commandArgs, {
    stdio: ['ignore', 'pipe', 'pipe', ...(takesStdout ? ['pipe' as const] : [])],
  });
  return { child, progress: child.stdio[progressFd] as Readable };
}

/**
 * Kills the child when no progress came for `stallTimeoutMs` and it did not work meanwhile: it
 * writes none while it drains its encoders at the end (25 frames of lag per libvpx encoder, a
 * whole ladder's at once: over 30 s on a loaded machine), nor while a filter holds frames back,
 * and it burns CPU doing so. One waiting on its input burns none.
 */
function watchStall(
  child: ChildProcess,
  stallTimeoutMs: number,
): { rearm: () => void; stop: () => void; stalled: () => boolean } {
  const cpuNow = (): number | undefined =>
    child.pid === undefined ? undefined : processCpuMs(child.pid);
  let stalled = false;
  let cpuAtArm = cpuNow();
  const onStall = (): void => {
    const cpu = cpuNow();
    if (cpu !== undefined && cpuAtArm !== undefined) {
      if (cpu - cpuAtArm >= stallTimeoutMs * STALL_CPU_SHARE) return rearm();
    }
    stalled = true;
    child.kill('SIGKILL');
  };
  let timer = setTimeout(onStall, stallTimeoutMs);
  function rearm(): void {
    clearTimeout(timer);
    timer = setTimeout(onStall, stallTimeoutMs);
    cpuAtArm = cpuNow();
  }
  return { rearm, stop: () => clearTimeout(timer), stalled: () => stalled };
}

/**
 * Hands each chunk of the child's stdout to `onStdout`; a consumer that throws stops ffmpeg, and
 * its error is the run's.
 */
function forwardStdout(
  child: ChildProcess,
  onStdout: (chunk: Buffer) => void,
): { error: () => Error | undefined } {
  let consumerError: unknown;
  child.stdout?.on('data', (chunk: Buffer) => {
    if (consumerError !== undefined) return;
    try {
      onStdout(chunk);
    } catch (error) {
      consumerError = error;
      child.kill('SIGKILL');
    }
  });
  return {
    error: () => {
      if (consumerError === undefined) return undefined;
      return consumerError instanceof Error
        ? consumerError
        : new MediaError('internal', 'the ffmpeg output could not be read', {
            cause: consumerError,
          });
    },
  };
}

/**
 * Reads ffmpeg's `-progress` output: `key=value` lines, each block ended by `progress=…`. Calls
 * `onBlock` at each block's end, with the output time and speed when the block has a valid time.
 */
function readProgress(
  stream: Readable,
  onBlock: (progress: FfmpegProgress | undefined) => void,
): void {
  let pending = '';
  let block: Record<string, string> = {};
  stream.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const eq = line.indexOf('=');
      if (eq > 0) block[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
      if (!line.startsWith('progress=')) continue;
      const us = Number(block['out_time_us']);
      const speed = Number.parseFloat(block['speed'] ?? '');
      onBlock(
        Number.isFinite(us) && us >= 0
          ? { outTimeSeconds: us / 1e6, ...(Number.isFinite(speed) ? { speed } : {}) }
          : undefined,
      );
      block = {};
    }
  });
}

/** A caller-facing error for a failed ffmpeg; its stderr goes only into the cause (for the log). */
function ffmpegFailure(code: number | null, stderr: string, bounds: CommandBounds): MediaError {
  const cause = new Error(
    `ffmpeg exited with ${code ?? 'a signal'}: ${stderr.trim() || 'no error output'}`,
  );
  // 126/127: setpriv or prlimit could not exec ffmpeg (missing, not executable).
  if (code === 126 || code === 127)
    return new MediaError('internal', 'ffmpeg could not start', { cause });
  if (looksOutOfMemory(stderr))
    return new MediaError(
      'memory_limit_exceeded',
      `the job needed more memory than the limit of ${bounds.memoryLimitBytes} bytes`,
      { cause },
    );
  if (looksDamaged(stderr))
    return new MediaError(
      'input_corrupt',
      'the input could not be decoded: the file is truncated or damaged',
      { cause },
    );
  return new MediaError('transcode_failed', 'ffmpeg could not process this input', { cause });
}

/** What ffmpeg's demuxers and decoders say of a file that is cut off or broken. */
function looksDamaged(stderr: string): boolean {
  return /partial file|moov atom not found|File ended prematurely|Invalid data found when processing input|Error while decoding stream|corrupt (input|frame|packet)/i.test(
    stderr,
  );
}

/** `-i path` with the demuxer and protocol allow-lists, for every input of every command. */
export function inputArgs(path: string, before: readonly string[] = []): string[] {
  return [
    '-format_whitelist',
    INPUT_FORMATS,
    '-protocol_whitelist',
    PROTOCOLS,
    ...before,
    '-i',
    path,
  ];
}

/**
 * `-f concat -i list` for a list of parts a job wrote itself (never a caller's file: the concat
 * demuxer opens whatever a list names). Only the concat demuxer and the MOV demuxer for the
 * parts (the allow-list reaches the files the list opens), only local files, and the demuxer's
 * safe mode: names relative to the list, no absolute paths.
 */
export function partsListInput(listPath: string): string[] {
  return [
    '-format_whitelist',
    'concat,mov',
    '-protocol_whitelist',
    'file',
    '-f',
    'concat',
    '-safe',
    '1',
    '-i',
    listPath,
  ];
}

/**
 * A raw rgb24 file a job wrote itself (never a caller's), as an input: only the rawvideo
 * demuxer, only local files, at the size and rate it was written with.
 */
export function rawFramesInput(
  path: string,
  size: { width: number; height: number },
  framesPerSecond: number,
): string[] {
  return [
    '-format_whitelist',
    'rawvideo',
    '-protocol_whitelist',
    'file',
    '-f',
    'rawvideo',
    '-pix_fmt',
    'rgb24',
    '-video_size',
    `${size.width}x${size.height}`,
    '-framerate',
    String(framesPerSecond),
    '-i',
    path,
  ];
}
