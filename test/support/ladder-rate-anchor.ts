// Issue 27's rules for a stream ladder's rungs: the streamer's two passes for the whole ladder
// (buildLadderPasses, one decode split to every rung) against an anchor per rung: the same
// encoder's two passes at its slow-class preset (x264 `slow`, x265 `medium` and VP9 cpu-used 2
// are the ladder's own, ANCHOR_PRESET names any that is not), that rung alone, with the stream's own constraints (a keyframe at every
// segment boundary only, the rung's VBV), which a ladder cannot drop. The anchor encodes the
// picture the ladder gives that rung (a lower rung is the top rung's picture scaled down), so the
// comparison is of the encoders; both are measured against the input made at the rung's size
// directly. Shared by test/integration/ladder-rate-control.test.ts and bench/stream-quality.ts.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  requestedLadder,
  type LadderEncoder,
  type RequestedRung,
  type Rung,
} from '../../services/streamer/ladder.ts';
import { pictureFilters } from '../../services/core/media/picture-filters.ts';
import { buildLadderPasses, ladderReference } from '../../services/streamer/build-ladder-args.ts';
import {
  deliveredKbps,
  maxWindowBits,
  pooledQuality,
  qualityScores,
  runMeasured,
  videoPackets,
  type QualityScores,
} from './encode-measures.ts';
import { readTestInput } from './job-input.ts';
import { anchorRetargetKbps, type MeasureTools } from './rate-control-anchor.ts';
import { anchorKey, cachedFigures } from './anchor-cache.ts';

/** This module's text: how a rung is encoded and measured, part of a cached anchor's key. */
const ownSource = readFile(new URL(import.meta.url), 'utf8');

export const LADDER_SEGMENT_SECONDS = 4;

/** One rung as delivered: its bitrate, peaks and picture. */
export interface RungMeasure {
  name: string;
  targetKbps: number;
  kbps: number;
  peak1sBits: number;
  quality: QualityScores;
}

/** Both sides of a ladder: each rung of ours and of the anchor, and the CPU of each side. */
export interface LadderComparison {
  ours: RungMeasure[];
  anchor: RungMeasure[];
  /**
   * Per rung, the anchor again at a corrected target where the first missed the rung's target
   * (rate-control-anchor.ts: anchorRetargetKbps, atCeiling, referenceOf); its CPU is not in
   * anchorCpuSeconds.
   */
  again: (RungMeasure | undefined)[];
  /** CPU seconds of one encode of each side (the mean over the samples). */
  oursCpuSeconds: number;
  anchorCpuSeconds: number;
}

/** The bits a rung's VBV allows in any window of `seconds`: peak × T + the buffer. */
export function rungPeakBoundBits(rung: Rung, seconds: number): number {
  return (rung.maxrateKbps * seconds + rung.bufsizeKbps) * 1000;
}

const ANCHOR_PRESET: Record<LadderEncoder, [string, string] | undefined> = {
  h264: undefined,
  h265: undefined,
  vp9: undefined,
};

/**
 * A one-rung ladder's passes made the anchor's: its slow-class preset in place of the ladder's
 * own, and, for a lower rung, the picture the whole ladder gives it (`picture.own` replaced by
 * `picture.inLadder` in the filter graph).
 */
function anchorOf(
  runs: readonly string[][],
  encoder: LadderEncoder,
  picture: { own: string; inLadder: string },
): string[][] {
  const swap = ANCHOR_PRESET[encoder];
  return runs.map((args) =>
    args.map((a, k) => {
      if (swap && args[k - 1] === '-preset' && a === swap[0]) return swap[1];
      if (args[k - 1] !== '-filter_complex') return a;
      if (!a.includes(picture.own)) throw new Error(`no picture ${picture.own} in ${a}`);
      return a.replace(picture.own, picture.inLadder);
    }),
  );
}

/** The rung's CMAF init and media segments joined into one file a prober reads. */
async function joinRendition(dir: string, into: string): Promise<void> {
  const names = (await readdir(dir)).sort();
  const init = names.filter((n) => n.startsWith('init'));
  const media = names.filter((n) => n.endsWith('.m4s'));
  const parts = await Promise.all([...init, ...media].map((n) => readFile(join(dir, n))));
  await writeFile(into, Buffer.concat(parts));
}

async function measureRung(
  tools: MeasureTools,
  clipPath: string,
  rung: Rung,
  renditionDir: string,
  scratch: string,
): Promise<RungMeasure> {
  const file = join(scratch, `${rung.name}.mp4`);
  await joinRendition(renditionDir, file);
  const { packets, seconds } = await videoPackets(file);
  const input = await readTestInput(clipPath);
  const picture = `${pictureFilters(input, rung, 'bicubic')},format=yuv420p`;
  return {
    name: rung.name,
    targetKbps: rung.bitrateKbps,
    kbps: deliveredKbps(packets, seconds),
    peak1sBits: maxWindowBits(packets, 1),
    quality: await qualityScores(tools.vmafFfmpeg, file, clipPath, scratch, picture),
  };
}

async function encodeLadder(
  tools: MeasureTools,
  clipPath: string,
  encoder: LadderEncoder,
  rungs: Rung[],
  dir: string,
  /** Encode `rungs` (one) as the anchor does, given the picture it has in this ladder. */
  anchorIn: { ladder: Rung[]; rung: number } | undefined,
  samples: number,
): Promise<{ cpuSeconds: number; rungs: RungMeasure[] }> {
  const runs: { cpuSeconds: number; rungs: RungMeasure[] }[] = [];
  for (let n = 0; n < samples; n++)
    runs.push(await encodeLadderOnce(tools, clipPath, encoder, rungs, join(dir, `${n}`), anchorIn));
  return {
    cpuSeconds: runs.reduce((t, r) => t + r.cpuSeconds, 0) / samples,
    rungs: rungs.map((_, k) => pooledRung(runs.map((r) => r.rungs[k]!))),
  };
}

/** One rung over several runs: the mean bitrate, the highest peak, the picture pooled. */
function pooledRung(runs: readonly RungMeasure[]): RungMeasure {
  const [first] = runs;
  if (!first) throw new Error('no runs');
  return {
    ...first,
    kbps: runs.reduce((t, r) => t + r.kbps, 0) / runs.length,
    peak1sBits: Math.max(...runs.map((r) => r.peak1sBits)),
    quality: pooledQuality(runs.map((r) => r.quality)),
  };
}

async function encodeLadderOnce(
  tools: MeasureTools,
  clipPath: string,
  encoder: LadderEncoder,
  rungs: Rung[],
  dir: string,
  anchorIn?: { ladder: Rung[]; rung: number },
): Promise<{ cpuSeconds: number; rungs: RungMeasure[] }> {
  const outDir = join(dir, 'out');
  await Promise.all(rungs.map((r) => mkdir(join(outDir, r.name), { recursive: true })));
  const input = await readTestInput(clipPath);
  const cpuSeconds = await runMeasured(
    tools.ffmpeg,
    ladderRuns(input, encoder, rungs, dir, anchorIn),
  );
  const measured: RungMeasure[] = [];
  for (const r of rungs)
    measured.push(await measureRung(tools, clipPath, r, join(outDir, r.name), dir));
  return { cpuSeconds, rungs: measured };
}

/** The ffmpeg runs of a ladder (ours), or of one rung the anchor's way (`anchorIn`), in `dir`. */
function ladderRuns(
  input: Awaited<ReturnType<typeof readTestInput>>,
  encoder: LadderEncoder,
  rungs: Rung[],
  dir: string,
  anchorIn?: { ladder: Rung[]; rung: number },
): string[][] {
  const passes = buildLadderPasses({
    input,
    rungs,
    encoder,
    segmentSeconds: LADDER_SEGMENT_SECONDS,
    outDir: join(dir, 'out'),
    passLogPrefix: join(dir, 'pass'),
    threads: 2,
  });
  if (!anchorIn) return passes;
  const [top, rung] = [anchorIn.ladder[0], anchorIn.ladder[anchorIn.rung]];
  if (!top || !rung) throw new Error('no such rung');
  const down = ladderReference(input, anchorIn.ladder).rungFilters[anchorIn.rung];
  const own = pictureFilters(input, rung, 'bicubic');
  const inLadder = down ? `${pictureFilters(input, top, 'bicubic')},${down}` : own;
  return anchorOf(passes, encoder, { own, inLadder });
}

/**
 * The rung at another target under the rung's own VBV: its peak and buffer are the stream's
 * constraints (the rung's HLS BANDWIDTH declares its peak), which a second run may not loosen,
 * or it answers what the encoder could do with a looser stream. The peak rises only to the
 * target itself, which x264 needs at least (below it, it encodes at the peak as CBR).
 */
function retargeted(rung: Rung, kbps: number): Rung {
  return { ...rung, bitrateKbps: kbps, maxrateKbps: Math.max(rung.maxrateKbps, kbps) };
}

/**
 * The whole ladder our way, then each rung alone the anchor's way, and again at a corrected
 * target where it missed the rung's, all in `dir`.
 */
export async function compareLadderWithAnchor(
  tools: MeasureTools,
  c: { clipPath: string; encoder: LadderEncoder; ladder: readonly RequestedRung[] },
  dir: string,
  /**
   * Encodes of each side, pooled (encodeLadder): x264 under a VBV with frame threads writes a
   * different video each run, and a short clip's VMAF p5 moves with it (see the test).
   */
  samples = 1,
  /**
   * Keep the anchor's figures between runs (anchor-cache.ts), for a caller that does not compare
   * CPU: the anchor's CPU is then the run's that measured it.
   */
  { reuseAnchor = false }: { reuseAnchor?: boolean } = {},
): Promise<LadderComparison & { rungs: Rung[] }> {
  const input = await readTestInput(c.clipPath);
  const rungs = requestedLadder(input.video, c.ladder);
  const ours = await encodeLadder(
    tools,
    c.clipPath,
    c.encoder,
    rungs,
    join(dir, 'ours'),
    undefined,
    samples,
  );
  const anchor: RungMeasure[] = [];
  const again: (RungMeasure | undefined)[] = [];
  let anchorCpuSeconds = 0;
  // The rung's anchor encoded in `name`; `counted`: its CPU is the anchors' (the first run's).
  const anchorRung = async (
    rung: Rung,
    k: number,
    name: string,
    counted: boolean,
  ): Promise<RungMeasure> => {
    const anchorIn = { ladder: rungs, rung: k };
    const encode = (): ReturnType<typeof encodeLadder> =>
      encodeLadder(tools, c.clipPath, c.encoder, [rung], join(dir, name), anchorIn, samples);
    const one = reuseAnchor
      ? await cachedFigures(
          await anchorKey({
            binaries: [tools.ffmpeg, tools.vmafFfmpeg],
            inputs: [c.clipPath],
            recipe: {
              code: await ownSource,
              samples,
              runs: ladderRuns(input, c.encoder, [rung], 'DIR', anchorIn).map((args) =>
                args.map((a) => (a === c.clipPath ? 'CLIP' : a)),
              ),
            },
          }),
          encode,
        )
      : await encode();
    const [measured] = one.rungs;
    if (!measured) throw new Error(`rung ${rung.name} not measured`);
    if (counted) anchorCpuSeconds += one.cpuSeconds;
    return measured;
  };
  for (const [k, r] of rungs.entries()) {
    const first = await anchorRung(r, k, `anchor-${r.name}`, true);
    anchor.push(first);
    const target = anchorRetargetKbps(r.bitrateKbps, first.kbps);
    again.push(
      target === undefined
        ? undefined
        : await anchorRung(retargeted(r, target), k, `anchor-${r.name}-again`, false),
    );
  }
  return {
    rungs,
    ours: ours.rungs,
    anchor,
    again,
    oursCpuSeconds: ours.cpuSeconds,
    anchorCpuSeconds,
  };
}
