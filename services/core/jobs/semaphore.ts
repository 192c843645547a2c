import { createFairShare } from '../bus/fair-share.ts';

/**
 * A counting semaphore: at most `size` holders at once. A freed slot goes to the waiting tenant
 * (organisation) holding the fewest slots, as the bus picks jobs (fair-share.ts); within one
 * tenant, waiters are served in arrival order.
 */
export interface Semaphore {
  /**
   * Runs `work` while holding one slot. Waiting ends early when `signal` aborts (rejecting with
   * its reason), so a job stopped while queued never takes a slot. `tenant` defaults to one
   * shared by every caller that names none.
   */
  use<T>(signal: AbortSignal, work: () => Promise<T>, tenant?: string): Promise<T>;
  /** Slots held right now. */
  readonly inUse: number;
}

export function createSemaphore(size: number): Semaphore {
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`a semaphore needs at least 1 slot, got ${size}`);
  let held = 0;
  const fair = createFairShare();
  const waiters: { grant: () => void; tenant: string }[] = [];
  const tenantOf = (w: { tenant: string }): string => w.tenant;

  const acquire = (signal: AbortSignal, tenant: string): Promise<void> => {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (held < size) {
      fair.pick([{ tenant }], 1, tenantOf);
      held++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = (): void => {
        signal.removeEventListener('abort', onAbort);
        held++;
        resolve();
      };
      const waiter = { grant, tenant };
      const onAbort = (): void => {
        const at = waiters.indexOf(waiter);
        if (at >= 0) waiters.splice(at, 1);
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waiters.push(waiter);
    });
  };

  const release = (tenant: string): void => {
    held--;
    fair.finished(tenant);
    const [next] = fair.pick(waiters, 1, tenantOf);
    if (!next) return;
    waiters.splice(waiters.indexOf(next), 1);
    next.grant();
  };

  return {
    async use(signal, work, tenant = '') {
      await acquire(signal, tenant);
      try {
        return await work();
      } finally {
        release(tenant);
      }
    },
    get inUse() {
      return held;
    },
  };
}
