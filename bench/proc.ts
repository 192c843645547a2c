// What Linux's /proc says of a process, for the benchmarks that read it (Linux only).
import { readFile } from 'node:fs/promises';

/** Clock ticks a second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** CPU time (user + system) the process has used so far, in seconds, from /proc/<pid>/stat. */
export async function cpuSeconds(pid: number | undefined): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** The process's resident memory now and at its peak, MiB, from /proc/<pid>/status. */
export async function memoryMiB(pid: number | undefined): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string): number =>
    Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/**
 * CPU time every process of the machine has used so far (all cores: user, nice, system, irq,
 * softirq, steal of /proc/stat's `cpu` line), in seconds: what a run cost the machine, the load
 * generator and a broker included.
 */
export async function machineBusySeconds(): Promise<number> {
  const stat = await readFile('/proc/stat', 'utf8');
  const ticks = (stat.split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  // user, nice, system, (idle, iowait), irq, softirq, steal
  const busy = [0, 1, 2, 5, 6, 7].reduce((sum, i) => sum + (ticks[i] ?? 0), 0);
  return busy / CLOCK_TICKS;
}
