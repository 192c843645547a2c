import { createFairShare } from './fair-share.ts';

/**
 * A counting semaphore: at most `size` holders at once. A freed slot goes to the waiting tenant
 * (organisation) holding the fewest slots, as the bus picks jobs (fair-share.ts); within one
 * tenant, waiters are served in arrival order.
 */
export interface Semaphore {
  /**
   * Runs `work` while holding one slot. Waiting ends early when `signal` aborts (rejecting with
   * its reason), so a job stopped while queued never takes a slot. `tenant` defaults to one
   * shared by every caller that names none. `cost` (default 1) is what the holder counts for in
   * its tenant's fair share (still one slot held): a stream ladder counts its rungs' pixels.
   */
  use<T>(signal: AbortSignal, work: () => Promise<T>, tenant?: string, cost?: number): Promise<T>;
  /** Slots held right now. */
  readonly inUse: number;
  /** Slots in all. */
  readonly size: number;
}

export function createSemaphore(size: number): Semaphore {
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`a semaphore needs at least 1 slot, got ${size}`);
  let held = 0;
  const fair = createFairShare();
  const waiters: { grant: () => void; tenant: string; cost: number }[] = [];
  const tenantOf = (w: { tenant: string }): string => w.tenant;
  const costOf = (w: { cost: number }): number => w.cost;

  const acquire = (signal: AbortSignal, tenant: string, cost: number): Promise<void> => {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (held < size) {
      fair.pick([{ tenant, cost }], 1, tenantOf, costOf);
      held++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = (): void => {
        signal.removeEventListener('abort', onAbort);
        held++;
        resolve();
      };
      const waiter = { grant, tenant, cost };
      const onAbort = (): void => {
        const at = waiters.indexOf(waiter);
        if (at >= 0) waiters.splice(at, 1);
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waiters.push(waiter);
    });
  };

  const release = (tenant: string, cost: number): void => {
    held--;
    fair.finished(tenant, cost);
    const [next] = fair.pick(waiters, 1, tenantOf, costOf);
    if (!next) return;
    waiters.splice(waiters.indexOf(next), 1);
    next.grant();
  };

  return {
    async use(signal, work, tenant = '', cost = 1) {
      await acquire(signal, tenant, cost);
      try {
        return await work();
      } finally {
        release(tenant, cost);
      }
    },
    get inUse() {
      return held;
    },
    size,
  };
}
