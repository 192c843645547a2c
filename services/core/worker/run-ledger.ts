/**
 * The request records one worker process has taken, by job id and attempt, so that a second
 * request record of the same attempt is skipped as a duplicate instead of run again.
 *
 * Where duplicates come from: an idempotent submission (same Idempotency-Key) that reaches two
 * ingress copies at once is published by both, with the same job id (derived from the key,
 * see services/ingress/idempotency.ts) and different event ids. Both records have the job id as
 * key, so they land on one partition, in order, and reach the same worker: the first runs, the
 * second is recognised here by its other event id. The same record delivered again (a hand-back,
 * a redelivery after a crash) keeps its event id and runs again, as it must.
 *
 * Kept in memory: when the worker restarts between the two records, or the partition moves to
 * another worker between them, the duplicate runs again. That run writes the same output
 * object and publishes outcome events with the same ids, so the notifier's callback has the
 * same webhook-id and receivers dedupe it (the at-least-once contract of every job).
 */
export interface RunLedger {
  /** False when another record of this job and attempt (another event id) was taken before. */
  claim(jobId: string, attempt: number, eventId: string): boolean;
}

/** Runs remembered (about 150 bytes each); the oldest are forgotten first. */
const MAX_RUNS = 50_000;

export function createRunLedger(maxRuns = MAX_RUNS): RunLedger {
  const runs = new Map<string, string>();
  return {
    claim(jobId, attempt, eventId) {
      const key = `${jobId}:${attempt}`;
      const first = runs.get(key);
      if (first !== undefined) return first === eventId;
      runs.set(key, eventId);
      if (runs.size > maxRuns) {
        const oldest = runs.keys().next();
        if (!oldest.done) runs.delete(oldest.value);
      }
      return true;
    },
  };
}
