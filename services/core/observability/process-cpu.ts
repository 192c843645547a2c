import { readFileSync } from 'node:fs';

/** Clock ticks a second of /proc's times (`getconf CLK_TCK`: 100 on Linux everywhere). */
const CLK_TCK = 100;

/**
 * CPU time a live process used so far, user and system, every thread, ms (/proc/<pid>/stat utime
 * + stime); undefined where it cannot be read (the process is gone, no /proc).
 */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command, which is in parentheses and may hold spaces: state is field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1000) / CLK_TCK : undefined;
  } catch {
    return undefined;
  }
}
