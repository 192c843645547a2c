/** Size of the frames the analysis pass decodes to: enough for colours and motion, tiny to move. */
export const ANALYSIS_WIDTH = 64;
export const ANALYSIS_HEIGHT = 36;
/** Bytes of one analysis frame (rgb24). */
export const ANALYSIS_FRAME_BYTES = ANALYSIS_WIDTH * ANALYSIS_HEIGHT * 3;

const BINS = 16;

/** What one analysis frame tells against the frame sampled before it. */
export interface FrameChange {
  /** Colour-histogram distance to the previous sample, 0 (same colours) to 1 (no colour in common). */
  colour: number;
  /** Mean absolute luma difference to the previous sample, 0 to 1. */
  motion: number;
}

/**
 * A per-channel histogram (16 bins each, as shares of the pixels). Per channel rather than
 * joint: a small moving object or a brightness drift moves little mass, a cut moves most of it.
 */
export function colourHistogram(rgb: Uint8Array): Float64Array {
  const histogram = new Float64Array(BINS * 3);
  const shift = 8 - Math.log2(BINS);
  for (let i = 0; i + 2 < rgb.length; i += 3) {
    histogram[(rgb[i] ?? 0) >> shift]! += 1;
    histogram[BINS + ((rgb[i + 1] ?? 0) >> shift)]! += 1;
    histogram[2 * BINS + ((rgb[i + 2] ?? 0) >> shift)]! += 1;
  }
  const pixels = Math.max(1, Math.floor(rgb.length / 3));
  for (let b = 0; b < histogram.length; b++) histogram[b]! /= pixels * 3;
  return histogram;
}

/** Half the L1 distance of two histograms: the share of pixel mass that moved, 0 to 1. */
export function histogramDistance(a: Float64Array, b: Float64Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs((a[i] ?? 0) - (b[i] ?? 0));
  return sum / 2;
}

/** Mean absolute difference of the luma (BT.601 weights) of two rgb24 frames, 0 to 1. */
export function lumaDifference(a: Uint8Array, b: Uint8Array): number {
  let sum = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i + 2 < n; i += 3) {
    const ya = 0.299 * (a[i] ?? 0) + 0.587 * (a[i + 1] ?? 0) + 0.114 * (a[i + 2] ?? 0);
    const yb = 0.299 * (b[i] ?? 0) + 0.587 * (b[i + 1] ?? 0) + 0.114 * (b[i + 2] ?? 0);
    sum += Math.abs(ya - yb);
  }
  return sum / Math.max(1, Math.floor(n / 3)) / 255;
}

/** The change from one analysis frame to the next. */
export function frameChange(previous: Uint8Array, next: Uint8Array): FrameChange {
  return {
    colour: histogramDistance(colourHistogram(previous), colourHistogram(next)),
    motion: lumaDifference(previous, next),
  };
}

/** What a stretch of the raw rgb24 analysis stream told, frame by frame. */
export interface FrameChangeReader {
  /** Takes ffmpeg's stdout chunk by chunk. */
  write: (chunk: Buffer) => void;
  /** One per frame kept; the first kept frame reports no change (it has no predecessor here). */
  readonly changes: FrameChange[];
  /** Copies of the first and last frames kept, to measure the change across two stretches. */
  first(): Uint8Array | undefined;
  last(): Uint8Array | undefined;
}

/**
 * Reads frames fed chunk by chunk, holding only the previous frame and the one being assembled.
 * `skip` frames are dropped first and at most `limit` kept after them (the rest are ignored), so
 * stretches of the input analysed apart join on exact sample boundaries.
 */
export function createFrameChangeReader(
  o: { skip?: number; limit?: number } = {},
): FrameChangeReader {
  const changes: FrameChange[] = [];
  let current = new Uint8Array(ANALYSIS_FRAME_BYTES);
  let previous = new Uint8Array(ANALYSIS_FRAME_BYTES);
  let previousHistogram: Float64Array | undefined;
  let first: Uint8Array | undefined;
  let filled = 0;
  let seen = 0;
  const skip = o.skip ?? 0;
  const limit = o.limit ?? Infinity;
  const take = (): void => {
    const histogram = colourHistogram(current);
    changes.push(
      previousHistogram
        ? {
            colour: histogramDistance(previousHistogram, histogram),
            motion: lumaDifference(previous, current),
          }
        : { colour: 0, motion: 0 },
    );
    first ??= current.slice();
    previousHistogram = histogram;
    [previous, current] = [current, previous];
  };
  return {
    changes,
    first: () => first,
    last: () => (previousHistogram ? previous.slice() : undefined),
    write: (chunk) => {
      let offset = 0;
      while (offset < chunk.length) {
        const n = Math.min(ANALYSIS_FRAME_BYTES - filled, chunk.length - offset);
        current.set(chunk.subarray(offset, offset + n), filled);
        filled += n;
        offset += n;
        if (filled < ANALYSIS_FRAME_BYTES) break;
        filled = 0;
        if (seen++ >= skip && changes.length < limit) take();
      }
    },
  };
}
