/** A counting semaphore: at most `size` holders at once; waiters are served in arrival order. */
export interface Semaphore {
  /**
   * Runs `work` while holding one slot. Waiting ends early when `signal` aborts (rejecting with
   * its reason), so a job stopped while queued never takes a slot.
   */
  use<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T>;
  /** Slots held right now. */
  readonly inUse: number;
}

export function createSemaphore(size: number): Semaphore {
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`a semaphore needs at least 1 slot, got ${size}`);
  let held = 0;
  const waiters: (() => void)[] = [];

  const acquire = (signal: AbortSignal): Promise<void> => {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (held < size) {
      held++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = (): void => {
        signal.removeEventListener('abort', onAbort);
        held++;
        resolve();
      };
      const onAbort = (): void => {
        const at = waiters.indexOf(grant);
        if (at >= 0) waiters.splice(at, 1);
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waiters.push(grant);
    });
  };

  const release = (): void => {
    held--;
    waiters.shift()?.();
  };

  return {
    async use(signal, work) {
      await acquire(signal);
      try {
        return await work();
      } finally {
        release();
      }
    },
    get inUse() {
      return held;
    },
  };
}
