import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

const SEGMENT = /^seg_(\d{5})\.m4s$/;
/** How often the renditions' folders are looked at while ffmpeg writes them, ms. */
const POLL_MS = 500;

export interface EarlyPublishing {
  /**
   * Stops looking, waits for the uploads under way, and gives the keys published (relative to
   * the output folder); rejects with the first upload failure.
   */
  stop(): Promise<Set<string>>;
}

/**
 * Uploads media segments while ffmpeg still writes the ladder: a segment is whole once its
 * rendition's next segment exists (the HLS muxer opens the next file only after closing one).
 * The last segment of each rendition, the init segments and everything that names segments
 * are left to the publish after the encode. At most `concurrency` uploads at once, in order of
 * appearance; after a failure no new one starts.
 */
export function publishDuringEncode(o: {
  outDir: string;
  renditions: readonly string[];
  concurrency: number;
  upload: (key: string) => Promise<unknown>;
}): EarlyPublishing {
  const seen = new Set<string>();
  const done = new Set<string>();
  const queue: string[] = [];
  let running = 0;
  let failure: { error: unknown } | undefined;
  let idle: (() => void) | undefined;

  const pump = (): void => {
    while (!failure && running < o.concurrency && queue.length > 0) {
      const key = queue.shift() as string;
      running++;
      o.upload(key).then(
        () => {
          done.add(key);
          running--;
          pump();
        },
        (error: unknown) => {
          failure ??= { error };
          running--;
          pump();
        },
      );
    }
    if (running === 0 && (queue.length === 0 || failure)) idle?.();
  };

  const look = async (): Promise<void> => {
    for (const name of o.renditions) {
      const files = await readdir(join(o.outDir, name)).catch(() => [] as string[]);
      const segments = files.filter((f) => SEGMENT.test(f)).sort();
      for (const file of segments.slice(0, -1)) {
        const key = `${name}/${file}`;
        if (seen.has(key)) continue;
        seen.add(key);
        queue.push(key);
      }
    }
    pump();
  };

  let looking = Promise.resolve();
  const timer = setInterval(() => {
    looking = looking.then(look, look);
  }, POLL_MS);

  return {
    async stop() {
      clearInterval(timer);
      await looking;
      if (running > 0 || (queue.length > 0 && !failure))
        await new Promise<void>((resolve) => {
          idle = resolve;
          pump();
        });
      if (failure) throw failure.error;
      return done;
    },
  };
}
