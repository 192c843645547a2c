/** Structured JSON logs: a constant message plus fields. Secrets never reach the output. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

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

/** An error as log fields: name, message, code, stack and its cause chain, URLs redacted. */
function redactError(error: Error, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = { name: error.name, message: redactUrl(error.message) };
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') out['code'] = code;
  if (error.stack) out['stack'] = redactUrl(error.stack);
  if (error.cause !== undefined) out['cause'] = redact(error.cause, depth + 1);
  if (error instanceof AggregateError) out['errors'] = redact(error.errors, depth + 1);
  return out;
}

function redactUrl(text: string): string {
  // Signed URLs carry their signature in the query; user info carries passwords.
  return text.replace(
    /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@]*@)?([^\s?#]*)(\?[^\s#]*)?/gi,
    (_m, scheme: string, user?: string, rest?: string, query?: string) =>
      `${scheme}${user ? '[redacted]@' : ''}${rest ?? ''}${query ? '?[redacted]' : ''}`,
  );
}

export function createLogger(options: {
  level: LogLevel;
  write?: (line: string) => void;
  base?: Record<string, unknown>;
}): Logger {
  const write = options.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const make = (base: Record<string, unknown>): Logger => {
    const emit = (
      level: Exclude<LogLevel, 'silent'>,
      msg: string,
      fields?: Record<string, unknown>,
    ): void => {
      if (rank[level] < rank[options.level]) return;
      const record = {
        time: new Date().toISOString(),
        level,
        msg,
        ...base,
        ...(fields ? (redact(fields) as object) : {}),
      };
      write(JSON.stringify(record));
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      child: (fields) => make({ ...base, ...(redact(fields) as object) }),
    };
  };
  return make(options.base ?? {});
}

export const silentLogger: Logger = createLogger({ level: 'silent' });
