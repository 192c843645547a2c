import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, dirname, join } from 'node:path';

/** A service started as its own process, as an operator would (`node services/<x>/main.ts`). */
export interface SpawnedService {
  child: ChildProcess;
  /** Structured log records it wrote so far. */
  logs: Record<string, unknown>[];
  waitForLog(
    predicate: (r: Record<string, unknown>) => boolean,
    timeoutMs: number,
  ): Promise<Record<string, unknown>>;
  /** SIGTERM and wait for exit (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<number | null>;
  kill(): Promise<void>;
  /**
   * Sends `signal` to the whole process group, as a terminal's Ctrl-C or `kill -- -PGID` does
   * (only for a process started with `ownGroup`).
   */
  signalGroup(signal: NodeJS.Signals): void;
  /** Resolves when no process of the group is left (only with `ownGroup`); false after `timeoutMs`. */
  groupGone(timeoutMs: number): Promise<boolean>;
}

export interface SpawnOptions {
  /** A process group of its own (pgid = its pid), so that the group can be signalled as a whole. */
  ownGroup?: boolean;
  cwd?: string;
}

/**
 * Node's options for a service, as `npm start` (package.json) and the image (NODE_OPTIONS in the
 * Dockerfile) run them: a 4 MiB young-generation semi-space instead of V8's 16 MiB, which the
 * start-up's module loading otherwise grows to and keeps (README "Footprint").
 */
export const SERVICE_NODE_ARGS: readonly string[] = ['--max-semi-space-size=4'];

export function spawnService(
  main: string,
  env: Record<string, string>,
  options: SpawnOptions = {},
): SpawnedService {
  return spawnCommand(process.execPath, [...SERVICE_NODE_ARGS, main], env, options);
}

/** Any command that writes the services' JSON log lines (`npm start`, a main.ts). */
export function spawnCommand(
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  options: SpawnOptions = {},
): SpawnedService {
  const child = spawn(command, args, {
    // Any free metrics port unless a test names one: copies run side by side on one machine.
    env: { PATH: process.env['PATH'] ?? '', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.ownGroup ?? false,
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  const logs: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  let pending = '';
  let stderr = '';
  const logFile = openLogFile(command, args, child.pid);
  child.once('exit', () => logFile?.end());
  child.stdout?.on('data', (chunk: Buffer) => {
    logFile?.write(chunk);
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: 'unparsed', line });
      }
    }
    waiters.forEach((w) => w());
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    logFile?.write(chunk);
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return {
    child,
    logs,
    waitForLog: (predicate, timeoutMs) =>
      waitForLog(logs, waiters, () => stderr, predicate, timeoutMs),
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    async kill() {
      if (options.ownGroup && child.pid !== undefined && groupAlive(child.pid))
        process.kill(-child.pid, 'SIGKILL');
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
    signalGroup(signal) {
      if (!options.ownGroup || child.pid === undefined)
        throw new Error('signalGroup needs a process started with ownGroup');
      process.kill(-child.pid, signal);
    },
    async groupGone(timeoutMs) {
      if (!options.ownGroup || child.pid === undefined)
        throw new Error('groupGone needs a process started with ownGroup');
      return groupGone(child.pid, timeoutMs);
    },
  };
}

/**
 * With TEST_SERVICE_LOG_DIR set (`npm test` sets it to its run directory, kept when a test
 * fails), every spawned service's output is also written to `<service>-<pid>.log` there, so a
 * failure on CI can be read after the processes are gone.
 */
function openLogFile(
  command: string,
  args: readonly string[],
  pid: number | undefined,
): ReturnType<typeof createWriteStream> | undefined {
  const dir = process.env['TEST_SERVICE_LOG_DIR'];
  if (!dir || pid === undefined) return undefined;
  const main = args.find((a) => a.endsWith('main.ts'));
  const name = main ? basename(dirname(main)) : basename(command);
  mkdirSync(dir, { recursive: true });
  const file = createWriteStream(join(dir, `${name}-${pid}.log`), { flags: 'a' });
  file.on('error', () => undefined);
  return file;
}

/** Resolves with the first log record matching `predicate`, checked again on each new line. */
function waitForLog(
  logs: Record<string, unknown>[],
  waiters: Set<() => void>,
  stderr: () => string,
  predicate: (r: Record<string, unknown>) => boolean,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const found = logs.find(predicate);
      if (found) {
        clearTimeout(timer);
        waiters.delete(check);
        resolve(found);
      }
    };
    const timer = setTimeout(() => {
      waiters.delete(check);
      reject(new Error(`log record not seen in ${timeoutMs} ms; stderr: ${stderr().slice(-800)}`));
    }, timeoutMs);
    waiters.add(check);
    check();
  });
}

/** Whether every process of group `pgid` is gone within `timeoutMs`. */
async function groupGone(pgid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** Whether any process of group `pgid` is left (signal 0 tests without sending). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A TCP port free on 127.0.0.1 now, for a service about to be started. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
