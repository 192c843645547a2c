// Quality per bit, issue 27: for each clip × encoder × bitrate, the transcoder's own encode
// (encodeToRate, at the clip's size, video only) and the anchor (same encoder, two passes,
// no VBV, slow-class preset) side by side in one run: delivered video bitrate, peaks over 1 s
// and 2 s windows, VMAF/PSNR-Y/SSIM-Y against the clip, CPU seconds of the ffmpeg runs; then
// the verdicts. An anchor that missed the request (more than 5 % over, 2 % under) runs
// again at a corrected target: the picture's ceiling is the shortfall that more target does not
// fill, and a second run nearer the request is the reference for picture and CPU (`*` in the
// table; rate-control-anchor.ts, referenceOf). Prints a Markdown table and a summary line,
// writes the results as JSON.
// Usage: npm run bench:quality -- [clips=all|short|a,b] [encoders=h264,h265,vp8,vp9]
//          [bitrates=1000,2000,4000] [json=quality-<time>.json in the temp dir]
// CPU is user + system seconds of the ffmpeg children (not wall time: the cores are shared);
// with BENCH_CPU_RUNS=N each side's encode runs N times and counts its least CPU time.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CORPUS, SHORT_CORPUS, corpusClip } from '../test/support/quality-corpus.ts';
import {
  ENCODERS,
  compareWithAnchor,
  peakBoundBits,
  referenceOf,
  verdicts,
  type Comparison,
  type EncodeMeasure,
  type Encoder,
  type Verdicts,
} from '../test/support/rate-control-anchor.ts';
import { median } from './stats.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));

function clipNames(arg: string | undefined): string[] {
  if (!arg || arg === 'all') return CORPUS.map((c) => c.name);
  if (arg === 'short') return SHORT_CORPUS.map((c) => c.name);
  return arg.split(',');
}
const list = (arg: string | undefined, fallback: string): string[] => (arg ?? fallback).split(',');

const clips = clipNames(process.argv[2]);
const encoders = list(process.argv[3], ENCODERS.join(',')) as Encoder[];
const bitrates = list(process.argv[4], '1000,2000,4000').map(Number);
const cpuRuns = Number(process.env['BENCH_CPU_RUNS'] ?? '1');
if (!Number.isInteger(cpuRuns) || cpuRuns < 1)
  throw new Error('BENCH_CPU_RUNS is a whole number ≥ 1');
const jsonPath =
  process.argv[5] ?? join(tmpdir(), `quality-${new Date().toISOString().replace(/:/g, '')}.json`);
for (const e of encoders) if (!ENCODERS.includes(e)) throw new Error(`unknown encoder ${e}`);

/** The libvmaf ffmpeg: TEST_VMAF_FFMPEG, else the one vmaf.sh installs into .cache/tools. */
async function vmafFfmpeg(): Promise<string> {
  const set = process.env['TEST_VMAF_FFMPEG'];
  if (set) return set;
  await run('bash', [join(root, 'scripts/test-services/vmaf.sh'), 'install']);
  return join(root, '.cache/tools/ffmpeg-vmaf/ffmpeg');
}

interface Row extends Comparison {
  clip: string;
  kind: string;
  encoder: Encoder;
  kbps: number;
  verdicts: Verdicts;
}

const f1 = (x: number): string => x.toFixed(1);
const f2 = (x: number): string => x.toFixed(2);
const pct = (x: number, of: number): string =>
  `${x >= of ? '+' : '−'}${f1(Math.abs((x / of - 1) * 100))} %`;
// A window's bits as a rate, in multiples of the request (the bound of rate-control.ts: 5.5× over 1 s, 3.5× over 2 s).
const peaks = (m: EncodeMeasure, kbps: number): string =>
  `${f2(m.peak1sBits / (kbps * 1000))}× / ${f2(m.peak2sBits / (2 * kbps * 1000))}×`;
const pair = (a: number, b: number, digits = 1): string =>
  `${a.toFixed(digits)} / ${b.toFixed(digits)}`;

function failed(v: Verdicts): string[] {
  const names: (keyof Verdicts)[] = ['bitrate', 'peaks', 'vmafMean', 'vmafP5', 'cpu'];
  return names.filter((n) => !v[n]);
}

/** The first try's rate when the final pass ran again after an overshoot. */
const retried = (o: EncodeMeasure): string =>
  o.retried ? ` retried, first ${f1(o.retried.firstKbps)}` : '';

/**
 * The anchor's rate, and its second run's when it missed the request (marked `*` when that run
 * is the reference the other columns compare with).
 */
function anchorRate(r: Row, reference: EncodeMeasure): string {
  const { anchor: a, retarget, kbps } = r;
  const first = `${f1(a.kbps)} (${pct(a.kbps, kbps)})`;
  const again = retarget
    ? `, at ${retarget.targetKbps}: ${f1(retarget.measure.kbps)} (${pct(retarget.measure.kbps, kbps)})${reference === retarget.measure ? '*' : ''}`
    : '';
  return `${first}${again}${r.verdicts.ceiling ? ' ceiling' : ''}`;
}

function tableRow(r: Row): string {
  const { ours: o, kbps } = r;
  const a = referenceOf(kbps, r.anchor, r.retarget?.measure);
  const miss = failed(r.verdicts);
  return [
    `${r.clip} (${r.kind})`,
    r.encoder,
    String(kbps),
    `${f1(o.kbps)} (${pct(o.kbps, kbps)})${retried(o)} / ${anchorRate(r, a)}`,
    `${peaks(o, kbps)} / ${peaks(a, kbps)}`,
    `${pair(o.quality.vmafMean, a.quality.vmafMean, 2)} (${f2(o.quality.vmafMean - a.quality.vmafMean)})`,
    `${pair(o.quality.vmafP5, a.quality.vmafP5, 2)} (${f2(o.quality.vmafP5 - a.quality.vmafP5)})`,
    pair(o.quality.vmafMin, a.quality.vmafMin),
    pair(o.quality.psnrYMean, a.quality.psnrYMean, 2),
    pair(o.quality.ssimYMean, a.quality.ssimYMean, 4),
    `${pair(o.cpuSeconds, a.cpuSeconds)} (${f2(o.cpuSeconds / a.cpuSeconds)}${r.verdicts.sameVideo ? ', same video' : ''})`,
    miss.length === 0 ? 'pass' : `FAIL ${miss.join(', ')}`,
  ].join(' | ');
}

const HEADER = [
  'clip',
  'encoder',
  'kb/s',
  'video kb/s ours / anchor',
  'peak 1 s / 2 s ours / anchor',
  'VMAF mean ours / anchor (Δ)',
  'VMAF p5 ours / anchor (Δ)',
  'VMAF min',
  'PSNR-Y',
  'SSIM-Y',
  'CPU s ours / anchor (ratio)',
  'verdict',
];

const tools = { ffmpeg: process.env['TEST_FFMPEG'] ?? 'ffmpeg', vmafFfmpeg: await vmafFfmpeg() };
const scratch = await mkdtemp(join(tmpdir(), 'media-bench-quality-'));
const rows: Row[] = [];
console.log(
  `${clips.length} clips × ${encoders.length} encoders × ${bitrates.join('/')} kb/s; ` +
    `peak bound ${f2(peakBoundBits('h264', 1, 1) / 1000)}× (1 s) and ${f2(peakBoundBits('h264', 1, 2) / 2000)}× (2 s) the request for x264/x265, ` +
    `${f2(peakBoundBits('vp9', 1, 1) / 1000)}× and ${f2(peakBoundBits('vp9', 1, 2) / 2000)}× for libvpx; ` +
    `CPU the least of ${cpuRuns} run${cpuRuns === 1 ? '' : 's'} of each side`,
);
console.log(`| ${HEADER.join(' | ')} |`);
console.log(`|${HEADER.map(() => '---').join('|')}|`);
try {
  for (const name of clips) {
    const clip = await corpusClip(name);
    for (const encoder of encoders)
      for (const kbps of bitrates) {
        const c = { clipPath: clip.path, width: clip.width, height: clip.height, encoder, kbps };
        const comparison = await compareWithAnchor(tools, c, scratch, { cpuRuns });
        const row = { clip: name, kind: clip.kind, encoder, kbps, ...comparison };
        rows.push({ ...row, verdicts: verdicts(encoder, kbps, comparison) });
        console.log(`| ${tableRow(rows.at(-1)!)} |`);
      }
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}
// Per-frame VMAF stays out of the file: the table's figures come from it.
const noFrames = (key: string, value: unknown): unknown =>
  key === 'vmafFrames' ? undefined : value;
await writeFile(jsonPath, `${JSON.stringify(rows, noFrames, 2)}\n`);

const passed = rows.filter((r) => failed(r.verdicts).length === 0).length;
const count = (k: keyof Verdicts): number => rows.filter((r) => !r.verdicts[k]).length;
console.log(
  `\n${passed}/${rows.length} cases pass every rule; failures: bitrate ${count('bitrate')}, ` +
    `peaks ${count('peaks')}, VMAF mean ${count('vmafMean')}, VMAF p5 ${count('vmafP5')}, ` +
    `CPU ${count('cpu')}; median CPU ratio ${f2(median(rows.map((r) => r.ours.cpuSeconds / referenceOf(r.kbps, r.anchor, r.retarget?.measure).cpuSeconds)))}; ` +
    `JSON: ${jsonPath}`,
);
