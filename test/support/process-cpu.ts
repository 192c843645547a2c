import { processCpuMs } from '../../services/core/observability/process-cpu.ts';

/** CPU time a live process used so far, user and system, ms; throws once it is gone. */
export function cpuMs(pid: number): number {
  const ms = processCpuMs(pid);
  if (ms === undefined) throw new Error(`no CPU time for process ${pid}`);
  return ms;
}

/** The CPU share of one core a live process used over the next `ms` (1 = a whole core). */
export async function cpuShareOver(pid: number, ms: number): Promise<number> {
  const before = cpuMs(pid);
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  return (cpuMs(pid) - before) / (performance.now() - start);
}
