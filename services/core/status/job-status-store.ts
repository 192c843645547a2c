import { deflateRawSync, inflateRawSync, type ZlibOptions } from 'node:zlib';

/**
 * The texts the status view keeps, one a job (the job's state as JSON), in the order they were
 * last set: the oldest first, which is the one the view forgets when it holds too many.
 */
export interface JobStatusStore {
  /** The job's text as it was set; undefined when not held. */
  get(jobId: string): string | undefined;
  /**
   * Sets the job's text, which makes it the newest. A `changing` text (a job still queued or
   * running, whose state will change again soon) is kept whole, never compressed.
   */
  set(jobId: string, text: string, changing?: boolean): void;
  delete(jobId: string): boolean;
  readonly size: number;
  /** Texts held compressed (the others are held whole). */
  readonly compressed: number;
  /** The job set least recently; undefined when empty. */
  oldest(): string | undefined;
}

/** Stands for the job's id in the stored texts (see createJobStatusStore). */
export const ID_MARK = '\u0001';

/**
 * What the compressor finds in nearly every state a job goes through: the keys of a status
 * entry (job-status-fold.ts) and of its callback, in the order the fold writes them, and the
 * fixed strings (statuses, types, callback states). A preset dictionary lets a 1 KiB text refer
 * to these from its first byte instead of spelling them out once each. The most common shape,
 * a finished transcode with its callback, comes last: deflate codes nearer matches shorter.
 * The store lives in one process's memory, so the dictionary may change from one version to
 * the next: nothing compressed with it is ever written out.
 */
function buildDictionary(): Buffer {
  const id = 'ID-PLACEHOLDER';
  const time = '2026-01-01T00:00:00.000Z';
  const result = {
    outputUrl: `https://${id}.mp4`,
    format: 'mp4',
    videoCodec: 'h264',
    width: 1280,
    height: 720,
    durationSeconds: 10,
    sizeBytes: 1000000,
    bitrateKbps: 1000,
  };
  const queued = {
    id,
    orgId: 'org',
    type: 'summary/gif',
    status: 'queued',
    createdAt: time,
    updatedAt: time,
    queuedSince: time,
    attempt: 1,
    submittedAt: time,
    requestDigest: 'sha256:',
    cancelRequestedAt: time,
    rev: 1000000000000000,
  };
  const failed = failedSample(id, time);
  const summary = {
    result: {
      ...result,
      format: 'gif',
      segments: [{ startSeconds: 0, durationSeconds: 1, endSeconds: 1, score: 0, sceneIndex: 0 }],
    },
    callback: { state: 'given_up', nextAttemptAt: time },
  };
  const succeeded = succeededSample(id, time, result);
  const text = [queued, failed, summary, { status: 'processing' }, succeeded]
    .map((t) => JSON.stringify(t))
    .join('');
  return Buffer.from(text.split(id).join(ID_MARK));
}

/** The dictionary's failed summary, with its final callback and retrying callback state. */
function failedSample(id: string, time: string): Record<string, unknown> {
  const failedId = `${id}:media.job.failed:1`;
  return {
    id,
    orgId: 'org',
    type: 'summary/mp4',
    status: 'failed',
    createdAt: time,
    updatedAt: time,
    attempt: 1,
    error: { code: 'input_unreachable', message: 'canceled' },
    finalCallback: {
      url: 'https://',
      webhookId: failedId,
      body: {
        eventId: failedId,
        jobId: id,
        kind: 'summary',
        status: 'failed',
        attempt: 1,
        finishedAt: time,
        code: 'internal',
        message: '',
      },
    },
    callback: { state: 'retrying', webhookId: failedId, attempts: 1, lastError: '' },
    progressPercent: 50,
  };
}

/** The dictionary's finished transcode with its callback: the most common shape, so last. */
function succeededSample(id: string, time: string, result: object): Record<string, unknown> {
  const succeededId = `${id}:media.job.succeeded:1`;
  return {
    id,
    orgId: 'org',
    type: 'transcode',
    status: 'succeeded',
    createdAt: time,
    updatedAt: time,
    attempt: 1,
    submittedAt: time,
    progressPercent: 100,
    result,
    finalCallback: {
      url: 'https://',
      webhookId: succeededId,
      body: {
        eventId: succeededId,
        jobId: id,
        kind: 'transcode',
        status: 'succeeded',
        attempt: 1,
        finishedAt: time,
        result,
      },
    },
    callback: { state: 'delivered', webhookId: succeededId, attempts: 1, lastStatus: 200 },
    rev: 1000000000000000,
  };
}

const DICTIONARY = buildDictionary();
// A window just above the dictionary and one text (zlib uses the dictionary's last window-size
// bytes) and a small hash table, since each call sets a compressor up anew. Small output chunks:
// they are cut from Node's shared 8 KiB buffer pool, where the default 16 KiB chunk is a buffer
// of its own a call, garbage until the next collection.
const DEFLATE: ZlibOptions = {
  dictionary: DICTIONARY,
  windowBits: 12,
  memLevel: 5,
  chunkSize: 512,
};
const INFLATE: ZlibOptions = { dictionary: DICTIONARY, windowBits: 12, chunkSize: 2048 };

/**
 * The text with its job id written as ID_MARK. split/join, not replaceAll: V8 leaves
 * replaceAll's result as pieces of the original text, which keeps it all alive.
 */
const mark = (jobId: string, text: string): string => text.split(jobId).join(ID_MARK);
const unmark = (jobId: string, marked: string): string => marked.split(ID_MARK).join(jobId);

/** Where each text is written for compressing: no new Buffer (cut from Node's pool) a call. */
let scratch = Buffer.allocUnsafeSlow(16 * 1024);

/**
 * Opens a compressed text in `packed`; a marked text kept whole there starts with anything else
 * (JSON texts start with `{`, and the view keeps nothing else).
 */
const PACKED = '\u0002';

/** A marked text as stored: raw deflate with the dictionary, kept as one byte a character. */
function pack(marked: string): string {
  const length = Buffer.byteLength(marked);
  if (length > scratch.length) scratch = Buffer.allocUnsafeSlow(length * 2);
  scratch.write(marked, 0);
  return PACKED + deflateRawSync(scratch.subarray(0, length), DEFLATE).toString('latin1');
}

/** A text as the store keeps it once compressed (exported for its test). */
export const packText = (jobId: string, text: string): string => pack(mark(jobId, text));

function unpack(stored: string): string {
  if (!stored.startsWith(PACKED)) return stored;
  return inflateRawSync(Buffer.from(stored.slice(1), 'latin1'), INFLATE).toString('utf8');
}

/**
 * Texts set most recently kept as they are (marked), not compressed (see createJobStatusStore).
 * Few: a text kept there through two young-generation collections is promoted to the old
 * generation, where it then dies, so every one more costs memory that outlives it; 256 still
 * holds every running job that ticks while fewer than 256 other changes a second come in.
 */
export const RECENT_TEXTS = 256;

/**
 * Each text is kept compressed, as a one-byte string: a finished job takes about a sixth of its
 * text's size (docs/benchmarks.md, "Status view start-up", has the figures and the command that
 * measures them). Most of a compression's or decompression's time is Node setting a zlib stream
 * up for the one call.
 *
 * - The job id, written five to seven times in a finished job (webhook ids, the callback's body,
 *   often the output URL), is replaced by ID_MARK before compressing: the id is the map's key
 *   already, and a random id is what compresses worst. JSON text never holds a raw control
 *   character (JSON.stringify escapes them, and JSON.parse, which checks every text the view
 *   reads, refuses them), so the mark cannot stand for anything else.
 * - Raw deflate with a preset dictionary (see buildDictionary): a text alone is too short for
 *   deflate to find much in it.
 * - The compressed bytes are kept as a Latin-1 string, one byte a character: a string is one heap
 *   object with a 16-byte header, where a Buffer a job would add a typed array, an ArrayBuffer and
 *   an off-heap allocation, or pin the 8 KiB pool slab it was cut from.
 * - A job changes many times while it runs (queued, processing, a progress tick a second, its
 *   end, its callback's states), each change read first: the `recent` texts set last stay
 *   uncompressed, so a running job is not compressed and decompressed at every tick; and a job
 *   still queued or running (`changing`) stays whole when it leaves `recent`, so a burst of
 *   submissions, each set, read back by the status writer and set again, costs no compression
 *   (a large share of the ingress's time under load otherwise). Only jobs that ended are
 *   compressed, once; the active jobs are bounded by MAX_ACTIVE_JOBS_PER_ORG.
 * - Order: both maps keep insertion order, a set moves the job to the end of `recent`, and the
 *   oldest recent text moves to the end of `packed`: every packed text is older than every
 *   recent one, so the oldest job is the first of `packed` (or of `recent` when none is packed).
 */
export function createJobStatusStore(options: { recent?: number } = {}): JobStatusStore {
  const recentMax = options.recent ?? RECENT_TEXTS;
  const recent = new Map<string, string>();
  /** The ids in `recent` whose text is `changing`: kept whole when they leave it. */
  const changingIds = new Set<string>();
  const packed = new Map<string, string>();
  let compressed = 0;
  const dropPacked = (jobId: string): boolean => {
    const p = packed.get(jobId);
    if (p === undefined) return false;
    if (p.startsWith(PACKED)) compressed -= 1;
    return packed.delete(jobId);
  };
  return {
    get(jobId) {
      const marked = recent.get(jobId);
      if (marked !== undefined) return unmark(jobId, marked);
      const p = packed.get(jobId);
      return p === undefined ? undefined : unmark(jobId, unpack(p));
    },
    set(jobId, text, changing = false) {
      dropPacked(jobId);
      recent.delete(jobId);
      recent.set(jobId, mark(jobId, text));
      if (changing) changingIds.add(jobId);
      else changingIds.delete(jobId);
      if (recent.size <= recentMax) return;
      const [leaving, marked] = recent.entries().next().value as [string, string];
      recent.delete(leaving);
      if (changingIds.delete(leaving)) packed.set(leaving, marked);
      else {
        packed.set(leaving, pack(marked));
        compressed += 1;
      }
    },
    delete(jobId) {
      changingIds.delete(jobId);
      return recent.delete(jobId) || dropPacked(jobId);
    },
    get size() {
      return recent.size + packed.size;
    },
    get compressed() {
      return compressed;
    },
    oldest() {
      const first = packed.size > 0 ? packed.keys().next() : recent.keys().next();
      return first.done ? undefined : first.value;
    },
  };
}
