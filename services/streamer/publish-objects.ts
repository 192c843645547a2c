/**
 * Publishing many objects of one job under an output prefix (a stream's segments, playlists,
 * images): bounded concurrency, each object with the transfer-rate floor of a single file, in
 * phases, so that what refers to other objects (playlists, then the manifests players open)
 * is written only once everything it names is there. The first failure stops the rest; what
 * later phases hold is then never written.
 */
import { MediaError } from '../core/errors.ts';
import type { MediaStore } from '../core/storage/media-store.ts';
import { withRateFloor, type RateFloor } from '../core/storage/transfer-rate.ts';

/** One file to publish: its local path and its key under the prefix. */
export interface PublishItem {
  path: string;
  key: string;
  contentType: string;
  sizeBytes: number;
}

export interface PublishOptions {
  store: MediaStore;
  /** Ends with `/`; keys are appended to it. */
  prefix: string;
  /** Published in order: every object of a phase is written before the next phase starts. */
  phases: readonly (readonly PublishItem[])[];
  /** Objects in flight at once. */
  concurrency: number;
  rateFloor: RateFloor;
  signal: AbortSignal;
  /**
   * Runs one upload (a transfer slot of the process, a span): by default the upload itself.
   */
  around?: <T>(upload: () => Promise<T>) => Promise<T>;
  /** Bytes published so far, of all objects. */
  onBytes?: (bytes: number) => void;
  /** Called with each key as its upload starts (what a failed publish may have to remove). */
  onStarted?: (key: string) => void;
  /**
   * Once `signal` aborts or an upload fails, no new upload starts; the ones under way get this
   * long, ms, to receive their store's answer before they are cut (default 0: cut at once). An
   * upload cut after its body went out may still be stored by the service a moment later; one
   * that got its answer is final, so what a failed publish left can be removed in one pass.
   */
  finishMs?: number;
}

/** What was published, in the order each object was finished. */
export interface Published {
  keys: string[];
  bytes: number;
}

/** Publishes `phases` under `prefix`; rejects with the first failure, having stopped the rest. */
export async function publishObjects(o: PublishOptions): Promise<Published> {
  const stop = new AbortController();
  const starting = AbortSignal.any([o.signal, stop.signal]);
  const cutting = afterGrace(starting, o.finishMs ?? 0);
  try {
    return await publishPhases(o, starting, cutting.signal, stop);
  } finally {
    cutting.dispose();
  }
}

async function publishPhases(
  o: PublishOptions,
  starting: AbortSignal,
  cutting: AbortSignal,
  stop: AbortController,
): Promise<Published> {
  const done: string[] = [];
  const inFlight = new Map<string, number>();
  let finishedBytes = 0;
  const report = (): void => {
    let moving = 0;
    for (const n of inFlight.values()) moving += n;
    o.onBytes?.(finishedBytes + moving);
  };
  const around = o.around ?? (<T>(upload: () => Promise<T>) => upload());
  const publishOne = async (item: PublishItem): Promise<void> => {
    const url = o.prefix + item.key;
    o.onStarted?.(item.key);
    const { bytes } = await around(() => {
      if (starting.aborted) throw stopped(starting);
      return withRateFloor(o.rateFloor, 'output', cutting, (s, onBytes) =>
        o.store.upload(item.path, url, {
          signal: s,
          contentType: item.contentType,
          onProgress: (n) => {
            onBytes(n);
            inFlight.set(item.key, n);
            report();
          },
        }),
      );
    });
    inFlight.delete(item.key);
    finishedBytes += bytes;
    done.push(item.key);
    report();
  };
  // The first failure stops the uploads under way (at once, or after finishMs), not only the
  // ones to come.
  const stoppingOthers = (item: PublishItem): Promise<void> =>
    publishOne(item).catch((error: unknown) => {
      stop.abort(error);
      throw error;
    });
  for (const phase of o.phases) await inPool(phase, o.concurrency, starting, stoppingOthers);
  return { keys: done, bytes: finishedBytes };
}

/** A signal that aborts `ms` after `signal` does, with its reason (at once when `ms` is 0). */
function afterGrace(signal: AbortSignal, ms: number): { signal: AbortSignal; dispose(): void } {
  if (ms <= 0) return { signal, dispose: () => undefined };
  const cut = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const onAbort = (): void => {
    timer = setTimeout(() => cut.abort(signal.reason), ms);
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return {
    signal: cut.signal,
    dispose: () => {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(timer);
    },
  };
}

/**
 * Runs `work` over `items` with at most `size` at once; after the first failure no new one
 * starts, and it is thrown once the ones under way have ended.
 */
export async function inPool<T>(
  items: readonly T[],
  size: number,
  signal: AbortSignal,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      // Not thrown from here: the other workers' items under way are awaited first.
      if (signal.aborted) failure ??= { error: stopped(signal) };
      if (failure) return;
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(size, items.length)) }, worker));
  if (failure) throw failure.error;
}

function stopped(signal: AbortSignal): unknown {
  return signal.reason instanceof Error
    ? signal.reason
    : new MediaError('interrupted', 'the job was stopped');
}
