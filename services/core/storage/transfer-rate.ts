import { MediaError } from '../errors.ts';
import type { Side } from './bucket-transfer.ts';

/** The slowest a transfer may be before it is cut. */
export interface RateFloor {
  /** Least bytes per second, averaged over one window (0: no floor). Default 16 384. */
  minBytesPerSecond: number;
  /** Length of one window, in ms. Default 30 000. */
  windowMs: number;
}

/**
 * Runs one transfer with a rate floor. `run` gets a signal to pass to the store and a byte
 * counter to feed from the store's progress; when a whole window moves fewer bytes than the
 * floor allows, that signal aborts with `input_unreachable` / `output_unreachable`. An idle
 * time-out alone never fires on a server that sends a byte every few seconds.
 */
export async function withRateFloor<T>(
  floor: RateFloor,
  side: Side,
  signal: AbortSignal,
  run: (signal: AbortSignal, onBytes: (total: number) => void) => Promise<T>,
): Promise<T> {
  if (floor.minBytesPerSecond <= 0) return run(signal, () => undefined);
  const cut = new AbortController();
  const least = Math.ceil((floor.minBytesPerSecond * floor.windowMs) / 1000);
  let total = 0;
  let atWindowStart = 0;
  const timer = setInterval(() => {
    if (total - atWindowStart < least) cut.abort(slowError(floor, side));
    atWindowStart = total;
  }, floor.windowMs);
  try {
    return await run(AbortSignal.any([signal, cut.signal]), (bytes) => {
      total = Math.max(total, bytes);
    });
  } finally {
    clearInterval(timer);
  }
}

function slowError(floor: RateFloor, side: Side): MediaError {
  const what = side === 'input' ? 'download' : 'upload';
  return new MediaError(
    side === 'input' ? 'input_unreachable' : 'output_unreachable',
    `the ${what} was slower than ${floor.minBytesPerSecond} bytes/s over ${floor.windowMs / 1000} s`,
  );
}
