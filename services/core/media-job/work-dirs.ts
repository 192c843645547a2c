import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../observability/logger.ts';

// `<pid>-<random>`: the pid tells a later start whether the process that made the dir is alive.
const JOB_DIR = /^(\d+)-[0-9a-f]{16}$/;

/** Makes a fresh job directory under `root`, named after this process. */
export async function makeJobDir(root: string): Promise<string> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  const dir = join(root, `${process.pid}-${randomBytes(8).toString('hex')}`);
  await mkdir(dir, { mode: 0o700 });
  return dir;
}

/**
 * Removes job dirs left by processes that are gone (a crash, `kill -9`). Dirs of live processes
 * stay, so two copies of a service on one machine never remove each other's work. Called once
 * at start, before any job of this process made a dir, so dirs carrying this process's own pid
 * are stale too (a container restarts its service with the same pid).
 */
export async function sweepJobDirs(root: string, log: Logger): Promise<number> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  let removed = 0;
  for (const name of await readdir(root)) {
    const pid = Number(JOB_DIR.exec(name)?.[1] ?? NaN);
    if (!Number.isInteger(pid) || (pid !== process.pid && isAlive(pid))) continue;
    await rm(join(root, name), { recursive: true, force: true });
    removed++;
  }
  if (removed > 0) log.info('work_dirs.swept', { root, removed });
  return removed;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the pid exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
