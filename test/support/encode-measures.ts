// What the rate-control test and bench/quality.ts measure of one encode: its video packets
// (delivered bitrate, peaks over sliding windows), its picture quality against the source (VMAF
// v0.6.1, PSNR-Y, SSIM-Y from one run of the libvmaf ffmpeg) and the CPU time of its ffmpeg runs.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BT709_TAGS } from '../../services/core/media/picture-filters.ts';

const run = promisify(execFile);
const ffprobePath = (): string => process.env['TEST_FFPROBE'] ?? 'ffprobe';

/** One video packet: its decode time (s) and size (bytes). */
export interface Packet {
  dts: number;
  bytes: number;
}

/**
 * The video packets of a file in decode order, the stream's length (s) they cover, and a digest
 * of the packets' data in that order: two encodes with the same digest wrote the same video, bit
 * for bit, whatever their containers hold besides.
 */
export async function videoPackets(
  path: string,
): Promise<{ packets: Packet[]; seconds: number; digest: string }> {
  const { stdout } = await run(
    ffprobePath(),
    [
      ...['-v', 'error', '-select_streams', 'v:0', '-show_data_hash', 'sha256', '-show_entries'],
      ...['packet=dts_time,pts_time,duration_time,size,data_hash', '-of', 'csv=p=0', path],
    ],
    { maxBuffer: 64 << 20 },
  );
  const packets: (Packet & { hash: string })[] = [];
  let first = Infinity;
  let end = -Infinity;
  for (const line of stdout.split('\n').filter(Boolean)) {
    // csv order follows ffprobe's field order, not the request's: pts, dts, duration, size, hash.
    const fields = line.split(',');
    const [pts, dts, duration, size] = fields.slice(0, 4).map(Number);
    if (pts === undefined || dts === undefined || size === undefined) continue;
    packets.push({ dts: Number.isFinite(dts) ? dts : pts, bytes: size, hash: fields[4] ?? '' });
    first = Math.min(first, pts);
    end = Math.max(end, pts + (Number.isFinite(duration) ? (duration ?? 0) : 0));
  }
  packets.sort((a, b) => a.dts - b.dts);
  const digest = createHash('sha256');
  for (const p of packets) digest.update(`${p.hash}\n`);
  return {
    packets: packets.map(({ dts, bytes }) => ({ dts, bytes })),
    seconds: end - first,
    digest: digest.digest('hex'),
  };
}

/** Delivered video bitrate (kb/s): the packets' bits over the stream's length. */
export function deliveredKbps(packets: readonly Packet[], seconds: number): number {
  return (packets.reduce((t, p) => t + p.bytes, 0) * 8) / 1000 / seconds;
}

/** The most bits in any window of `seconds` (packets counted by decode time, [t, t + seconds)). */
export function maxWindowBits(packets: readonly Packet[], seconds: number): number {
  let best = 0;
  let sum = 0;
  let start = 0;
  for (const p of packets) {
    sum += p.bytes;
    while ((packets[start]?.dts ?? Infinity) <= p.dts - seconds)
      sum -= packets[start++]?.bytes ?? 0;
    best = Math.max(best, sum);
  }
  return best * 8;
}

/** The p-th percentile (0–100) of xs, linearly interpolated between ranks; NaN for none. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = sorted[Math.floor(rank)] ?? NaN;
  const high = sorted[Math.ceil(rank)] ?? NaN;
  return low + (high - low) * (rank - Math.floor(rank));
}

/** Picture quality of an encode against its source, over every frame. */
export interface QualityScores {
  vmafMean: number;
  /** 5th percentile of the per-frame VMAF: the bad moments a mean hides. */
  vmafP5: number;
  vmafMin: number;
  psnrYMean: number;
  ssimYMean: number;
  /** The per-frame VMAF the three above come from, in presentation order. */
  vmafFrames: number[];
}

/**
 * The scores of several encodes of one picture taken together, as one encode of all their
 * frames: a percentile over every frame, the means weighted by frame count. Used where an
 * encoder's output differs from run to run (x264's VBV under frame threads), so that a
 * comparison is of the encoder and not of one run's luck.
 */
export function pooledQuality(samples: readonly QualityScores[]): QualityScores {
  if (samples.length === 0) throw new Error('no scores to pool');
  const frames = samples.flatMap((s) => s.vmafFrames);
  const weighted = (of: (s: QualityScores) => number): number =>
    samples.reduce((t, s) => t + of(s) * s.vmafFrames.length, 0) / frames.length;
  return {
    vmafMean: mean(frames),
    vmafP5: percentile(frames, 5),
    vmafMin: Math.min(...frames),
    psnrYMean: weighted((s) => s.psnrYMean),
    ssimYMean: weighted((s) => s.ssimYMean),
    vmafFrames: frames,
  };
}

/**
 * VMAF (model v0.6.1), PSNR and SSIM of `distorted` against `reference` (same size), in one run
 * of the libvmaf ffmpeg at `vmafFfmpeg`; its logs are written into `dir`. Timestamps are reset
 * on both so that an encoder's start offset (B-frame delay, edit lists) pairs the right frames;
 * with `pairBy` 'order' the n-th frames of both are paired whatever their times (frames at a
 * variable rate, which a WebM stores to the millisecond: a frame stored a fraction of a
 * millisecond early would be paired with its neighbour's reference).
 */
export async function qualityScores(
  vmafFfmpeg: string,
  distorted: string,
  reference: string,
  dir: string,
  /** Filters that make the reference the picture the encode was given (default none). */
  referenceFilter = 'null',
  pairBy: 'time' | 'order' = 'time',
): Promise<QualityScores> {
  const vmafLog = join(dir, 'vmaf.json');
  const psnrLog = join(dir, 'psnr.log');
  const ssimLog = join(dir, 'ssim.log');
  // psnr and ssim pass their first input through, so the three filters chain on one output.
  // The same colour tags on both sides: this ffmpeg (9.x) negotiates colour spaces and would
  // convert a tagged encode (the service's, BT.709) to an untagged clip's, costing it 4 dB.
  const times = pairBy === 'time' ? 'setpts=PTS-STARTPTS' : 'setpts=N/(25*TB)';
  const graph = [
    `[0:v]format=yuv420p,${BT709_TAGS},${times}[d]`,
    `[1:v]${referenceFilter},format=yuv420p,${BT709_TAGS},${times},split=3[r1][r2][r3]`,
    `[d][r1]psnr=stats_file=${psnrLog}[d1]`,
    `[d1][r2]ssim=stats_file=${ssimLog}[d2]`,
    `[d2][r3]libvmaf=model=version=vmaf_v0.6.1:n_threads=2:log_fmt=json:log_path=${vmafLog}`,
  ].join(';');
  await run(vmafFfmpeg, [
    ...['-hide_banner', '-loglevel', 'error', '-nostdin', '-i', distorted, '-i', reference],
    ...['-lavfi', graph, '-f', 'null', '-'],
  ]);
  const vmaf = JSON.parse(await readFile(vmafLog, 'utf8')) as {
    frames: { metrics: { vmaf: number } }[];
  };
  const frames = vmaf.frames.map((f) => f.metrics.vmaf);
  return {
    vmafMean: mean(frames),
    vmafP5: percentile(frames, 5),
    vmafMin: Math.min(...frames),
    psnrYMean: mean(statsColumn(await readFile(psnrLog, 'utf8'), 'psnr_y').map(capInfinity)),
    ssimYMean: mean(statsColumn(await readFile(ssimLog, 'utf8'), 'Y')),
    vmafFrames: frames,
  };
}

/** A per-frame value of ffmpeg's psnr/ssim stats files (`key:value` pairs, a frame a line). */
function statsColumn(text: string, key: string): number[] {
  const pattern = new RegExp(`(?:^| )${key}:(\\S+)`);
  return text
    .split('\n')
    .map((line) => pattern.exec(line)?.[1])
    .filter((v): v is string => v !== undefined)
    .map(Number);
}

// An identical frame has an infinite PSNR; 100 dB stands for it as in libvmaf's own psnr.
const capInfinity = (db: number): number => (Number.isFinite(db) ? db : 100);
const mean = (xs: readonly number[]): number => xs.reduce((t, x) => t + x, 0) / xs.length;

/** user + system CPU seconds of the children this process has waited for (Linux /proc). */
async function childrenCpuSeconds(): Promise<number> {
  const stat = await readFile('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 16 and 17 of proc(5) (cutime, cstime), counted from the state (field 3), in ticks
  // of 1/100 s (USER_HZ on Linux).
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/**
 * The CPU time (user + system seconds, every thread) of the children `work` runs and waits for.
 * Read from this process's children's totals, so nothing else may run a child of this process
 * meanwhile.
 */
export async function childrenCpuOf(work: () => Promise<unknown>): Promise<number> {
  const before = await childrenCpuSeconds();
  await work();
  return (await childrenCpuSeconds()) - before;
}

/** Runs one ffmpeg to its end, quietly; rejects with its stderr when it fails. */
export async function runQuiet(ffmpeg: string, args: readonly string[]): Promise<void> {
  await run(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args], {
    maxBuffer: 16 << 20,
  });
}

/** Runs the ffmpeg runs one after the other and returns their CPU time (childrenCpuOf). */
export async function runMeasured(ffmpeg: string, runs: readonly string[][]): Promise<number> {
  return childrenCpuOf(async () => {
    for (const args of runs) await runQuiet(ffmpeg, args);
  });
}
