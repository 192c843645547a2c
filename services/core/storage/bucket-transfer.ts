import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline as pipelineCallback, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MediaError } from '../errors.ts';

/** The parts of the bucket adapters that do not depend on a cloud SDK. */

export type Side = 'input' | 'output';

/** What an adapter could learn from an SDK error; never its message (SDKs put key ids and signatures there). */
export interface FailureFacts {
  /** HTTP status the service answered, if it answered at all. */
  status?: number;
  /** The service's error code (`NoSuchKey`, `AuthorizationFailure`, ...). */
  serviceCode?: string;
  /** The local failure was about the credentials themselves (e.g. an unreadable private key). */
  badCredentials?: boolean;
  /** A transport error's code (`ECONNREFUSED`, `ETIMEDOUT`, ...). */
  networkCode?: string;
}

const PROGRESS_INTERVAL_MS = 250;

/** Reports a growing byte count at most every 250 ms; `flush` reports the last one. */
export function throttledProgress(onProgress: ((bytes: number) => void) | undefined): {
  report(bytes: number): void;
  flush(): void;
} {
  let last = -Infinity;
  let latest = 0;
  let reported = -1;
  return {
    report(bytes) {
      latest = bytes;
      const now = performance.now();
      if (!onProgress || now - last < PROGRESS_INTERVAL_MS) return;
      last = now;
      reported = bytes;
      onProgress(bytes);
    },
    flush() {
      if (onProgress && reported !== latest) onProgress(latest);
      reported = latest;
    },
  };
}

/** Counts bytes passing through; fails with input_too_large past maxBytes. */
export function byteCounter(onBytes: (total: number) => void, maxBytes: number): Transform {
  let total = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      total += chunk.length;
      if (total > maxBytes)
        return done(
          new MediaError('input_too_large', `the input is larger than ${maxBytes} bytes`),
        );
      onBytes(total);
      done(null, chunk);
    },
  });
}

/** Refuses before reading a byte when the service already says the object is too big. */
export function checkDeclaredSize(declared: number | undefined, maxBytes: number): void {
  if (declared !== undefined && declared > maxBytes)
    throw new MediaError(
      'input_too_large',
      `the input is ${declared} bytes; the limit is ${maxBytes}`,
    );
}

/**
 * Streams a download body into destPath, counting bytes against maxBytes. A failed or short
 * download leaves no file behind, so nothing partial can be taken for the input.
 */
export async function bodyToFile(
  body: Readable,
  destPath: string,
  options: {
    signal: AbortSignal;
    maxBytes: number;
    declared: number | undefined;
    onProgress: ((bytes: number) => void) | undefined;
  },
): Promise<number> {
  const progress = throttledProgress(options.onProgress);
  let bytes = 0;
  try {
    const counter = byteCounter((n) => {
      bytes = n;
      progress.report(n);
    }, options.maxBytes);
    await pipeline(body, counter, createWriteStream(destPath), { signal: options.signal });
    if (options.declared !== undefined && bytes !== options.declared)
      throw new MediaError(
        'input_unreachable',
        `the input ended after ${bytes} of ${options.declared} bytes`,
      );
    progress.flush();
    return bytes;
  } catch (error) {
    body.destroy();
    await rm(destPath, { force: true });
    throw error;
  }
}

/**
 * fileSource through a byte counter, joined with `pipeline`: an error or abort on either side
 * destroys the returned stream with that error, so the reader (an SDK, an HTTP request) sees
 * it and no stream is left erroring without a listener.
 */
export function countedFileSource(
  srcPath: string,
  signal: AbortSignal,
  side: Side,
  onBytes: (total: number) => void,
): Readable {
  const counter = byteCounter(onBytes, Infinity);
  // The error is the reader's to handle: it arrives through the counter, destroyed with it.
  pipelineCallback(fileSource(srcPath, signal, side), counter, () => undefined);
  return counter;
}

/** A read stream of srcPath that fails (so whoever reads it stops) when the signal aborts. */
export function fileSource(srcPath: string, signal: AbortSignal, side: Side): Readable {
  const source = createReadStream(srcPath);
  const onAbort = (): void => {
    source.destroy(abortedError(signal, side));
  };
  signal.addEventListener('abort', onAbort, { once: true });
  source.on('close', () => signal.removeEventListener('abort', onAbort));
  return source;
}

/** The error for a transfer stopped by its signal: the signal's own MediaError if it has one. */
export function abortedError(signal: AbortSignal, side: Side): MediaError {
  const reason: unknown = signal.reason;
  if (reason instanceof MediaError) return reason;
  return new MediaError(
    'interrupted',
    `the ${side === 'input' ? 'download' : 'upload'} was stopped`,
  );
}

const SAFE_SERVICE_CODE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

/**
 * Maps a failure to the taxonomy, with a message written here from status and service code
 * only. Not found is only "not found" for inputs: for outputs it means a missing bucket.
 */
export function failureToMediaError(service: string, side: Side, facts: FailureFacts): MediaError {
  const { status, serviceCode } = facts;
  const shownCode = serviceCode && SAFE_SERVICE_CODE.test(serviceCode) ? ` ${serviceCode}` : '';
  const answer = `${status}${shownCode}`;
  const rejected = side === 'input' ? 'input_rejected' : 'output_rejected';
  const unreachable = side === 'input' ? 'input_unreachable' : 'output_unreachable';
  if (facts.badCredentials)
    return new MediaError(rejected, `${service} credentials could not be used`);
  if (status === undefined)
    return new MediaError(
      unreachable,
      `could not reach ${service}${facts.networkCode ? ` (${facts.networkCode})` : ''}`,
    );
  if ((status === 404 || status === 410) && side === 'input')
    return new MediaError(
      'input_not_found',
      `the input object does not exist (${service} answered ${answer})`,
    );
  if (status === 401 || status === 403)
    return new MediaError(rejected, `${service} refused the credentials or access (${answer})`);
  // 412: the object changed between reading its size and its bytes; a new attempt reads it afresh.
  if (status === 408 || status === 412 || status === 429 || status >= 500)
    return new MediaError(unreachable, `${service} is unavailable (${answer})`);
  return new MediaError(
    rejected,
    `${service} refused the ${side === 'input' ? 'download' : 'upload'} (${answer})`,
  );
}

/**
 * Runs one transfer and turns whatever it throws into a MediaError: MediaErrors pass through,
 * an aborted signal wins, everything else goes through `facts` (the adapter's SDK knowledge).
 */
export async function mapTransferErrors<T>(
  service: string,
  side: Side,
  signal: AbortSignal,
  facts: (error: unknown) => FailureFacts,
  run: () => Promise<T>,
): Promise<T> {
  try {
    if (signal.aborted) throw abortedError(signal, side);
    return await run();
  } catch (error) {
    if (error instanceof MediaError) {
      // input_too_large / input_unreachable raised mid-stream by our own counters.
      if (signal.aborted && error.code !== 'input_too_large') throw abortedError(signal, side);
      throw error;
    }
    if (signal.aborted) throw abortedError(signal, side);
    // A local file failing (source missing, disk full) is this service's fault, not the store's.
    if (isLocalFileError(error)) throw error;
    const transport = networkCode(error);
    throw failureToMediaError(service, side, {
      ...(transport !== undefined && { networkCode: transport }),
      ...facts(error),
    });
  }
}

function isLocalFileError(error: unknown): boolean {
  return typeof (error as NodeJS.ErrnoException | null)?.path === 'string';
}

const NETWORK_CODE = /^E[A-Z0-9_]{2,40}$/;

/** The system error code of a transport failure, looked for one `cause` deep (fetch wraps them). */
function networkCode(error: unknown): string | undefined {
  for (const candidate of [error, (error as { cause?: unknown } | null)?.cause]) {
    const code = (candidate as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && NETWORK_CODE.test(code)) return code;
  }
  return undefined;
}

/** Settles with `promise`, or rejects as soon as the signal aborts (for SDK calls without a signal). */
export async function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal,
  side: Side,
): Promise<T> {
  if (signal.aborted) throw abortedError(signal, side);
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(abortedError(signal, side));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Credential objects arrive as unknown JSON; a field is usable only as a non-empty string. */
export function stringField(value: unknown, name: string): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const field = (value as Record<string, unknown>)[name];
  return typeof field === 'string' && field !== '' ? field : undefined;
}

/** The error for a credentials object that does not have what the store needs. */
export function credentialsError(service: string, side: Side, needs: string): MediaError {
  return new MediaError(
    side === 'input' ? 'input_rejected' : 'output_rejected',
    `${service} locations need credentials with ${needs}`,
  );
}
