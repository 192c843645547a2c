import { MediaError } from '../errors.ts';

/**
 * Runs the tasks side by side; the first failure stops the others (no ffmpeg outlives its job),
 * and it is the error thrown: a sibling stopped because of it reports "interrupted".
 */
export async function runSideBySide(
  signal: AbortSignal,
  tasks: readonly ((signal: AbortSignal) => Promise<void>)[],
): Promise<void> {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const settled = await Promise.allSettled(
      tasks.map((task) =>
        task(controller.signal).catch((error: unknown) => {
          controller.abort();
          throw error;
        }),
      ),
    );
    const failures = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
    const cause =
      failures.find((e) => !(e instanceof MediaError && e.code === 'interrupted')) ?? failures[0];
    if (cause instanceof Error) throw cause;
    if (cause !== undefined) throw new MediaError('internal', 'an ffmpeg run failed', { cause });
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
