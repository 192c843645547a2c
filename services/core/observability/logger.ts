import { writeSync } from 'node:fs';
import { pino, stdSerializers, type Logger as PinoLogger } from 'pino';
import { createLogWriter, type LogWriter } from './log-writer.ts';

/** Structured JSON logs: a constant message plus fields. Secrets never reach the output. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const SECRET_KEY =
  /(secret|password|passwd|token|apikey|api_key|accountkey|private_key|creds|credentials|authorization|signature|^key$)/i;

/** Redacts secret-named fields, and user info and query strings in URLs. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 6) return '[deep]';
  if (typeof value === 'string') return redactUrl(value);
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value instanceof Error) return redactError(value, depth);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      out[k] = SECRET_KEY.test(k) ? '[redacted]' : redact(v, depth + 1);
    return out;
  }
  return value;
}

/**
 * An error as log fields by pino's own serializer (type, message, stack, its own fields, the
 * cause chain and aggregated errors), then redacted like any other field.
 */
function redactError(error: Error, depth: number): unknown {
  const serialized: Record<string, unknown> = { ...stdSerializers.errWithCause(error) };
  // A cause that is not an Error (a string, an object) is not followed by the serializer.
  if (error.cause !== undefined && serialized['cause'] === undefined)
    serialized['cause'] = error.cause;
  return redact(serialized, depth + 1);
}

function redactUrl(text: string): string {
  // Signed URLs carry their signature in the query; user info carries passwords.
  return text.replace(
    /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@]*@)?([^\s?#]*)(\?[^\s#]*)?/gi,
    (_m, scheme: string, user?: string, rest?: string, query?: string) =>
      `${scheme}${user ? '[redacted]@' : ''}${rest ?? ''}${query ? '?[redacted]' : ''}`,
  );
}

/** Most bytes of log lines waiting to be written; past it lines are dropped, not memory grown. */
export const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024;

/**
 * At exit, how long the last lines may wait for a reader that does not read, and how long they
 * may take in all (a reader reading slowly), ms; then they are dropped and counted on stderr.
 */
export const LOG_EXIT_FLUSH = { stallMs: 1000, maxMs: 3000 } as const;

let stdoutWriter: LogWriter | undefined;
/**
 * One writer of standard output for the whole process, however many loggers it makes: two
 * writers of their own could each write a part of a long batch and cut each other's lines.
 */
const stdout = (): LogWriter => (stdoutWriter ??= openStdout());

function openStdout(): LogWriter {
  // Making process.stdout and process.stderr puts a pipe or socket behind them in non-blocking
  // mode (libuv), so that a reader that stops reading fails a write with EAGAIN instead of
  // blocking the process in it. Their errors (EPIPE when the reader is gone, if anything writes
  // through them) are the log writer's to count, not an uncaught exception.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const writer = createLogWriter({
    fd: 1,
    maxBytes: LOG_BUFFER_MAX_BYTES,
    report: (message) => {
      try {
        writeSync(2, `media-service: ${message}\n`);
      } catch {
        // Standard error is gone too: the count is all there is.
      }
    },
  });
  process.on('exit', () => writer.flushSync(LOG_EXIT_FLUSH));
  return writer;
}

/**
 * pino underneath: one JSON line per record (`level` as its name, `time` in ISO 8601, then the
 * bindings and fields, then `msg`). Fields are redacted before pino sees them, and only for
 * levels that are on.
 *
 * Lines are written asynchronously (log-writer.ts): the lines logged in one turn of the event
 * loop share one write at its end. A synchronous write a line cost about a tenth of the ingress's
 * time under load (bench:ingress profile). What is left is written when the process exits
 * (normally, by process.exit or an uncaught error), so the last lines before an exit are not
 * lost; only a SIGKILL loses the lines of the turn. Neither a reader that stops reading nor one
 * that went away can make the process grow or hang: past LOG_BUFFER_MAX_BYTES waiting lines are
 * dropped, after a failed write (EPIPE) every line is, and the exit flush is bounded by
 * LOG_EXIT_FLUSH; dropped lines are counted on stderr when it still takes them.
 */
export function createLogger(options: {
  level: LogLevel;
  write?: (line: string) => void;
  base?: Record<string, unknown>;
}): Logger {
  const write = options.write;
  // A silent logger never opens standard output (silentLogger is made when this module loads).
  const destination = write
    ? { write: (line: string) => write(line.endsWith('\n') ? line.slice(0, -1) : line) }
    : options.level === 'silent'
      ? { write: () => undefined }
      : stdout();
  const root = pino(
    {
      level: options.level,
      base: redact(options.base ?? {}) as Record<string, unknown>,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  const wrap = (p: PinoLogger): Logger => {
    const emit =
      (level: Exclude<LogLevel, 'silent'>) =>
      (msg: string, fields?: Record<string, unknown>): void => {
        if (!p.isLevelEnabled(level)) return;
        if (fields) p[level](redact(fields) as object, msg);
        else p[level](msg);
      };
    return {
      debug: emit('debug'),
      info: emit('info'),
      warn: emit('warn'),
      error: emit('error'),
      child: (fields) => wrap(p.child(redact(fields) as Record<string, unknown>)),
    };
  };
  return wrap(root);
}

export const silentLogger: Logger = createLogger({ level: 'silent' });
