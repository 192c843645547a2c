import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { MediaError } from '../errors.ts';

const run = promisify(execFile);

/** How every ffmpeg and ffprobe is started. */
export interface CommandBounds {
  /** RLIMIT_DATA of the child (heap and private anonymous mappings), in bytes. Default 2 GiB. */
  memoryLimitBytes: number;
}

/**
 * The command line that runs `binary` bounded: setsid puts it in a session and process group of
 * its own, so a terminal's Ctrl-C or a `kill -- -PGID` meant for the service reaches the service
 * alone, which then drains its jobs (ffmpeg would stop at once and the job would fail); setpriv
 * makes the kernel kill it when the spawning process dies (also on `kill -9`; the death signal
 * is the parent's, whatever the group), prlimit caps its data segment. All three exec (setsid
 * forks only when its caller leads a process group, which a spawned child never does), so the
 * child's pid is the binary's own and the death signal survives. `--as` is not used: it counts
 * thread stacks and mapped libraries and fails multi-threaded encoders long before they use
 * real memory.
 */
export function boundedCommand(
  binary: string,
  args: readonly string[],
  bounds: CommandBounds,
): [string, string[]] {
  return [
    'setsid',
    [
      'setpriv',
      '--pdeathsig',
      'KILL',
      '--',
      'prlimit',
      `--data=${bounds.memoryLimitBytes}`,
      '--',
      binary,
      ...args,
    ],
  ];
}

/** Thrown at start when a binary the workers need is missing. */
export class MissingToolError extends Error {
  override name = 'MissingToolError';
}

/** Runs `<binary> -version` through the bounding chain, so a missing setpriv, prlimit or binary fails the start. */
export async function checkBoundedTools(
  binaries: readonly string[],
  bounds: CommandBounds,
): Promise<void> {
  for (const binary of binaries) {
    const [command, args] = boundedCommand(binary, ['-hide_banner', '-version'], bounds);
    await run(command, args, { timeout: 30_000 }).catch((error: unknown) => {
      throw new MissingToolError(
        `could not run ${binary} through "setsid setpriv --pdeathsig KILL -- prlimit --data=N --" (setsid, setpriv and prlimit come with util-linux): ${(error as Error).message}`,
        { cause: error },
      );
    });
  }
}

/** stderr of a process that ran out of memory under its limit (x264, libavutil, C++ encoders). */
export function looksOutOfMemory(stderr: string): boolean {
  return /malloc|cannot allocate memory|out of memory|bad_alloc|ENOMEM/i.test(stderr);
}

/**
 * Signals of a binary that crashed on its own (a fault, an abort): the input's or the build's
 * doing, not a stop from outside.
 */
const CRASH_SIGNALS: ReadonlySet<string> = new Set([
  'SIGSEGV',
  'SIGBUS',
  'SIGFPE',
  'SIGILL',
  'SIGABRT',
  'SIGSYS',
  'SIGTRAP',
]);

/**
 * ffmpeg's exit code after it caught SIGINT, SIGTERM or SIGQUIT and closed its output
 * (ffmpeg.c: `exit_program(received_nb_signals ? 255 : main_return_code)`); its errors exit 1.
 */
const FFMPEG_SIGNALLED_EXIT = 255;

/**
 * The error of an ffmpeg or ffprobe stopped by a signal the service did not send (callers check
 * their own kills first: abort, stall, time-out): someone stopped the process (a group kill, an
 * operator, the OOM killer), not the input, so the job is `interrupted` and runs again. Undefined
 * for any other end, crashes included.
 */
export function stoppedFromOutside(
  binary: 'ffmpeg' | 'ffprobe',
  code: number | null | undefined,
  signal: string | null | undefined,
): MediaError | undefined {
  const stopped = signal ? !CRASH_SIGNALS.has(signal) : code === FFMPEG_SIGNALLED_EXIT;
  if (!stopped || (!signal && binary !== 'ffmpeg')) return undefined;
  return new MediaError('interrupted', `${binary} was stopped by a signal from outside the job`, {
    cause: new Error(`${binary} ended with ${signal ?? `exit code ${code}`}`),
  });
}
