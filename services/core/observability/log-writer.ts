import { writeSync } from 'node:fs';

/** Where log lines go: a file descriptor written in batches, never blocking the process for good. */
export interface LogWriter {
  /** Queues one line (newline included); it is written at the end of this turn of the event loop. */
  write(line: string): void;
  /**
   * Writes what is queued now, synchronously (at exit, when there is no event loop left): what
   * cannot be written within `stallMs` without progress, or `maxMs` in all, is dropped and counted.
   */
  flushSync(limits: { stallMs: number; maxMs: number }): void;
  /** Lines dropped so far: the queue was full, or the descriptor failed (EPIPE, ...). */
  readonly dropped: number;
}

export interface LogWriterOptions {
  fd: number;
  /** Most bytes (string length) waiting to be written; past it, lines are dropped. */
  maxBytes: number;
  /** Tells that lines are being dropped (default: nothing). Called once per cause, and at the end. */
  report?: (message: string) => void;
  /** The write system call (default fs.writeSync): bytes written, or throws (EAGAIN, EPIPE, ...). */
  writeSync?: (fd: number, data: Buffer) => number;
  /** Sleeps the thread for `ms` between tries at exit (default Atomics.wait). */
  sleepSync?: (ms: number) => void;
}

/** Between two tries of a write the descriptor refused with EAGAIN (its reader is behind), ms. */
const RETRY_MS = 100;
const EXIT_RETRY_MS = 10;

/**
 * Lines are written with one write a turn of the event loop (the lines logged in that turn
 * together), synchronously, to a descriptor that should be non-blocking (a pipe or socket behind
 * `process.stdout`; a file or terminal does not block for long): a reader that stops reading then
 * makes the write fail with EAGAIN, and lines wait (up to `maxBytes`) and are tried again, instead
 * of the process blocking in a write for good. Any other error (EPIPE: the reader is gone) ends the
 * writing: from then on lines are dropped, and counted. pino's own destination (sonic-boom 4.2.1)
 * retries a write failing with EPIPE forever in its exit flush, 100 ms at a time, so a process
 * whose log reader went away never exited (issue 28).
 */
export function createLogWriter(options: LogWriterOptions): LogWriter {
  const s: Lines = {
    options,
    write: options.writeSync ?? writeSync,
    report: options.report ?? (() => undefined),
    queue: [],
    queuedBytes: 0,
    head: undefined,
    failed: undefined,
    overflowing: false,
    dropped: 0,
  };
  const sleep = options.sleepSync ?? sleepThread;
  let scheduled = false;
  let retryTimer: NodeJS.Timeout | undefined;
  const flushSoon = (): void => {
    scheduled = false;
    if (writeSome(s)) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      flushSoon();
    }, RETRY_MS);
    // Waiting for a reader must not keep the process alive: the exit flush tries once more.
    retryTimer.unref();
  };

  return {
    get dropped() {
      return s.dropped;
    },
    write(line) {
      if (s.failed) return drop(s, 1, 'failed');
      if (s.queuedBytes + line.length > options.maxBytes) return drop(s, 1, 'full');
      s.queue.push(line);
      s.queuedBytes += line.length;
      if (scheduled || retryTimer) return;
      scheduled = true;
      setImmediate(flushSoon);
    },
    flushSync(limits) {
      clearTimeout(retryTimer);
      flushBeforeExit(s, limits, sleep);
    },
  };
}

/** The lines waiting to be written, and what became of those that never will be. */
interface Lines {
  options: LogWriterOptions;
  write: (fd: number, data: Buffer) => number;
  report: (message: string) => void;
  queue: string[];
  queuedBytes: number;
  /** Bytes taken from the queue and not yet written (a write that was cut short). */
  head: Buffer | undefined;
  failed: string | undefined;
  overflowing: boolean;
  dropped: number;
}

function drop(s: Lines, lines: number, cause: string): void {
  s.dropped += lines;
  if (cause === 'full' && !s.overflowing) {
    s.overflowing = true;
    s.report(`log lines dropped: more than ${s.options.maxBytes} bytes wait to be written`);
  }
}

/** Writes until done or refused; false when the descriptor is not ready (EAGAIN). */
function writeSome(s: Lines): boolean {
  while (!s.failed) {
    if (!s.head) {
      if (s.queue.length === 0) return true;
      s.head = Buffer.from(s.queue.join(''));
      s.queue = [];
      s.queuedBytes = 0;
    }
    let n: number;
    try {
      n = s.write(s.options.fd, s.head);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
      s.failed = code;
      drop(s, unwrittenLines(s), 'failed');
      s.report(`log output failed (${code}): log lines are dropped from now on`);
      return true;
    }
    s.head = n < s.head.length ? s.head.subarray(n) : undefined;
    if (!s.head) s.overflowing = false;
  }
  return true;
}

/** Empties the queue and the head, counting their lines. */
function unwrittenLines(s: Lines): number {
  const inHead = s.head ? countLines(s.head) : 0;
  const lines = s.queue.length + inHead;
  s.head = undefined;
  s.queue = [];
  s.queuedBytes = 0;
  return lines;
}

/** Writes what waits, retrying while the reader makes progress, within the exit's limits. */
function flushBeforeExit(
  s: Lines,
  { stallMs, maxMs }: { stallMs: number; maxMs: number },
  sleep: (ms: number) => void,
): void {
  const start = Date.now();
  let progressAt = start;
  let left = (s.head?.length ?? 0) + s.queuedBytes;
  while (!writeSome(s)) {
    const now = Date.now();
    const leftNow = (s.head?.length ?? 0) + s.queuedBytes;
    if (leftNow < left) [left, progressAt] = [leftNow, now];
    if (now - progressAt >= stallMs || now - start >= maxMs) {
      drop(s, unwrittenLines(s), 'exit');
      break;
    }
    sleep(EXIT_RETRY_MS);
  }
  if (s.dropped > 0)
    s.report(
      `${s.dropped} log lines dropped${s.failed ? ` (log output failed: ${s.failed})` : ''}`,
    );
}

function countLines(data: Buffer): number {
  let lines = 0;
  for (let at = data.indexOf(10); at !== -1; at = data.indexOf(10, at + 1)) lines++;
  // A line cut short (no newline yet) is a line too.
  return data.length > 0 && data[data.length - 1] !== 10 ? lines + 1 : lines;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleepThread(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}
