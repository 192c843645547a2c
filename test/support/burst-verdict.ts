import type { ReceivedCallback } from './file-server.ts';

/** What became of a burst of jobs: terminal states from GET /jobs/:id, callbacks as received. */
export interface BurstVerdict {
  terminal: number;
  /** Jobs that ended other than succeeded (failed or canceled). */
  notSucceeded: number;
  /** Jobs with at least one callback. */
  calledBack: number;
  /** Jobs with more than one callback. */
  duplicates: number;
  /** Every job terminal, with exactly one callback. */
  ok: boolean;
}

const TERMINAL = new Set(['succeeded', 'failed', 'canceled']);

/**
 * Judges a burst: `ids` are the acknowledged job ids, `statuses` their GET /jobs/:id bodies (same
 * order), `callbacks` what the receiver got (others' callbacks are ignored by job id).
 */
export function judgeBurst(
  ids: readonly string[],
  statuses: readonly Record<string, unknown>[],
  callbacks: readonly ReceivedCallback[],
): BurstVerdict {
  const wanted = new Set(ids);
  const perJob = new Map<string, number>();
  for (const c of callbacks) {
    const id = String(c.body['jobId']);
    if (wanted.has(id)) perJob.set(id, (perJob.get(id) ?? 0) + 1);
  }
  const terminal = statuses.filter((s) => TERMINAL.has(String(s['status']))).length;
  const notSucceeded = statuses.filter((s) => s['status'] !== 'succeeded').length;
  const duplicates = [...perJob.values()].filter((n) => n > 1).length;
  return {
    terminal,
    notSucceeded,
    calledBack: perJob.size,
    duplicates,
    ok: terminal === ids.length && perJob.size === ids.length && duplicates === 0,
  };
}
