import { pino, stdSerializers, type Logger as PinoLogger } from 'pino';

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

let stdoutDestination: ReturnType<typeof pino.destination> | undefined;
/**
 * One buffered writer of standard output for the whole process, however many loggers it makes:
 * two writers of their own could each write a part of a long batch and cut each other's lines.
 */
const stdout = (): ReturnType<typeof pino.destination> =>
  (stdoutDestination ??= pino.destination({
    dest: 1,
    sync: false,
    maxLength: LOG_BUFFER_MAX_BYTES,
  }));

/**
 * pino underneath: one JSON line per record (`level` as its name, `time` in ISO 8601, then the
 * bindings and fields, then `msg`). Fields are redacted before pino sees them, and only for
 * levels that are on.
 *
 * Lines are written asynchronously: a line goes out at once when no write is under way, and the
 * lines logged while one is share the next write. A synchronous write a line cost about a tenth
 * of the ingress's time under load (bench:ingress profile). pino writes what is left
 * synchronously when the process exits (normally, by process.exit or an uncaught error), so the
 * last lines before an exit are not lost; only a SIGKILL loses the lines of the write in flight.
 * A reader that stops reading cannot make the process grow: past LOG_BUFFER_MAX_BYTES waiting,
 * lines are dropped.
 */
export function createLogger(options: {
  level: LogLevel;
  write?: (line: string) => void;
  base?: Record<string, unknown>;
}): Logger {
  const write = options.write;
  const destination = write
    ? { write: (line: string) => write(line.endsWith('\n') ? line.slice(0, -1) : line) }
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
