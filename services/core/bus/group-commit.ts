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
   * waits on it with that error. Batches are written one at a time, in arrival order.
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
  settled: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export function createGroupCommit<T>(options: GroupCommitOptions<T>): GroupCommit<T> {
  const lingerMs = options.lingerMs ?? 0;
  const maxItems = options.maxItems ?? 1000;
  const maxBytes = options.maxBytes ?? 512 * 1024;
  const sizeOf = options.sizeOf ?? (() => 0);
  let open: Batch<T> | undefined;
  let timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  // The write in flight: the next batch goes when it settles, so batches keep their order and
  // the records arriving meanwhile join one write instead of queueing one each.
  let writing: Promise<void> = Promise.resolve();

  const newBatch = (): Batch<T> => {
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const settled = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { items: [], bytes: 0, settled, resolve, reject };
  };

  const seal = (): void => {
    const batch = open;
    if (!batch) return;
    open = undefined;
    if (timer !== undefined) {
      if (lingerMs > 0) clearTimeout(timer as NodeJS.Timeout);
      else clearImmediate(timer as NodeJS.Immediate);
      timer = undefined;
    }
    writing = writing.then(async () => {
      try {
        await options.write(batch.items);
        batch.resolve();
      } catch (error) {
        batch.reject(error);
      }
    });
  };

  return {
    add(items) {
      if (items.length === 0) return Promise.resolve();
      let batch = open;
      if (!batch) {
        batch = open = newBatch();
        timer = lingerMs > 0 ? setTimeout(seal, lingerMs) : setImmediate(seal);
      }
      for (const item of items) {
        batch.items.push(item);
        batch.bytes += sizeOf(item);
      }
      const { settled } = batch;
      if (batch.items.length >= maxItems || batch.bytes >= maxBytes) seal();
      return settled;
    },

    async drain() {
      seal();
      await writing;
    },
  };
}
