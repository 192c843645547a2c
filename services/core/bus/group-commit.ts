/**
 * Group commit: concurrent publishes share one durable write. Each caller still waits for the
 * write that holds its records (the acknowledgement means what it meant before), but a burst of
 * N submissions costs one fsync or one produce request instead of N.
 */

export interface GroupCommitOptions<T> {
  /**
   * How long the first item of a batch waits for others, ms (default 0: until the end of the
   * current event-loop turn, so whatever arrived while the previous write ran goes together).
   */
  lingerMs?: number;
  /** A batch is written at once when it holds this many items (default 1000). */
  maxItems?: number;
  /** A batch is written at once when its items weigh this many bytes (default 512 KiB). */
  maxBytes?: number;
  /** Weight of one item, in bytes (default 0: only `maxItems` bounds a batch). */
  sizeOf?: (item: T) => number;
  /**
   * Writes a batch; resolving acknowledges every item of it, rejecting fails every caller that
   * waits on it with that error. Batches are written one at a time, in arrival order; the items
   * that arrive while a batch is being written wait and go together in the next.
   */
  write: (items: T[]) => Promise<void>;
}

export interface GroupCommit<T> {
  /** Resolves once the batch holding `items` is written; rejects with the batch's error. */
  add(items: readonly T[]): Promise<void>;
  /** Writes what is waiting now and resolves once every batch taken so far has settled. */
  drain(): Promise<void>;
}

interface Batch<T> {
  items: T[];
  bytes: number;
  /** Takes no more items (reached maxItems or maxBytes, or drained). */
  full: boolean;
  settled: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export function createGroupCommit<T>(options: GroupCommitOptions<T>): GroupCommit<T> {
  const lingerMs = options.lingerMs ?? 0;
  const maxItems = options.maxItems ?? 1000;
  const maxBytes = options.maxBytes ?? 512 * 1024;
  const sizeOf = options.sizeOf ?? (() => 0);
  // Batches not written yet, oldest first; only the last one takes new items. A batch waiting
  // behind the write in flight keeps taking them until that write ends (or it is full): the
  // records arriving meanwhile join one write instead of queueing in batches of their own.
  const waiting: Batch<T>[] = [];
  let writing = false;
  let timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  const idle: (() => void)[] = [];

  const newBatch = (): Batch<T> => {
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const settled = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { items: [], bytes: 0, full: false, settled, resolve, reject };
  };

  const clearTimer = (): void => {
    if (timer === undefined) return;
    if (lingerMs > 0) clearTimeout(timer as NodeJS.Timeout);
    else clearImmediate(timer as NodeJS.Immediate);
    timer = undefined;
  };

  // Writes the oldest waiting batch, then the next, one at a time, in arrival order.
  const writeNext = (): void => {
    if (writing) return;
    const batch = waiting.shift();
    if (!batch) {
      for (const wake of idle.splice(0)) wake();
      return;
    }
    if (waiting.length === 0) clearTimer();
    writing = true;
    // Through an async function, so a write that throws instead of rejecting fails its batch too.
    const written = (async () => options.write(batch.items))();
    written.then(batch.resolve, batch.reject).finally(() => {
      writing = false;
      writeNext();
    });
  };

  const schedule = (): void => {
    if (timer !== undefined || writing) return;
    const fire = (): void => {
      timer = undefined;
      writeNext();
    };
    timer = lingerMs > 0 ? setTimeout(fire, lingerMs) : setImmediate(fire);
  };

  return {
    add(items) {
      if (items.length === 0) return Promise.resolve();
      let batch = waiting.at(-1);
      if (!batch || batch.full) waiting.push((batch = newBatch()));
      for (const item of items) {
        batch.items.push(item);
        batch.bytes += sizeOf(item);
      }
      const { settled } = batch;
      if (batch.items.length >= maxItems || batch.bytes >= maxBytes) {
        batch.full = true;
        writeNext();
      } else schedule();
      return settled;
    },

    drain() {
      for (const batch of waiting) batch.full = true;
      clearTimer();
      writeNext();
      if (!writing && waiting.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idle.push(resolve));
    },
  };
}
