import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** How every ffmpeg and ffprobe is started. */
export interface CommandBounds {
  /** RLIMIT_DATA of the child (heap and private anonymous mappings), in bytes. Default 2 GiB. */
  memoryLimitBytes: number;
}

/**
 * The command line that runs `binary` bounded: setpriv makes the kernel kill it when the
 * spawning process dies (also on `kill -9`), prlimit caps its data segment. Both exec, so the
 * child's pid is the binary's own. `--as` is not used: it counts thread stacks and mapped
 * libraries and fails multi-threaded encoders long before they use real memory.
 */
export function boundedCommand(
  binary: string,
  args: readonly string[],
  bounds: CommandBounds,
): [string, string[]] {
  return [
    'setpriv',
    [
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
        `could not run ${binary} through "setpriv --pdeathsig KILL -- prlimit --data=N --" (setpriv and prlimit come with util-linux): ${(error as Error).message}`,
        { cause: error },
      );
    });
  }
}

/** stderr of a process that ran out of memory under its limit (x264, libavutil, C++ encoders). */
export function looksOutOfMemory(stderr: string): boolean {
  return /malloc|cannot allocate memory|out of memory|bad_alloc|ENOMEM/i.test(stderr);
}
