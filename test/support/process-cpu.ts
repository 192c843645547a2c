import { readFileSync } from 'node:fs';

/** Clock ticks a second of /proc's times (`getconf CLK_TCK`: 100 on Linux everywhere). */
const CLK_TCK = 100;

/** CPU time a live process used so far, user and system, ms (/proc/<pid>/stat utime + stime). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command, which is in parentheses and may hold spaces: state is field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

/** The CPU share of one core a live process used over the next `ms` (1 = a whole core). */
export async function cpuShareOver(pid: number, ms: number): Promise<number> {
  const before = cpuMs(pid);
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  return (cpuMs(pid) - before) / (performance.now() - start);
}
