// Quality per bit of a stream ladder, issue 27: for each clip × encoder, the streamer's two
// passes for the whole default ladder of the clip (buildLadderPasses: one decode split to every
// rung) against each rung encoded alone by the same encoder's two passes at its slow-class preset
// with the stream's constraints (keyframes at segment boundaries only, the rung's VBV; see
// test/support/ladder-rate-anchor.ts), side by side in one run: per rung the delivered video
// bitrate against its target, VMAF mean / 5th percentile against the clip at the rung's size;
// per ladder the CPU seconds of both sides. A rung's anchor that missed its target runs again at
// a corrected one, as in bench/quality.ts (its CPU not counted). Prints a Markdown table and a
// summary line.
// Usage: npm run bench:stream-quality -- [clips=animation,camera,fast-motion-short,slides]
//          [encoders=h264,h265,vp9]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultLadder, type LadderEncoder } from '../services/streamer/ladder.ts';
import { readTestInput } from '../test/support/job-input.ts';
import { compareLadderWithAnchor } from '../test/support/ladder-rate-anchor.ts';
import { corpusClip } from '../test/support/quality-corpus.ts';
import { RULES, bitrateVerdict, referenceOf } from '../test/support/rate-control-anchor.ts';

const clips = (process.argv[2] ?? 'animation,camera,fast-motion-short,slides').split(',');
const encoders = (process.argv[3] ?? 'h264,h265,vp9').split(',') as LadderEncoder[];
const vmafFfmpeg = process.env['TEST_VMAF_FFMPEG'];
if (!vmafFfmpeg)
  throw new Error('TEST_VMAF_FFMPEG is not set (see scripts/test-services/vmaf.sh env)');
const tools = { ffmpeg: process.env['TEST_FFMPEG'] ?? 'ffmpeg', vmafFfmpeg };

const f1 = (x: number): string => x.toFixed(1);
const f2 = (x: number): string => x.toFixed(2);
const pct = (x: number, of: number): string =>
  `${x >= of ? '+' : '−'}${f1(Math.abs((x / of - 1) * 100))} %`;

console.log(
  '| clip | encoder | rung | target kb/s | video kb/s ours / anchor | VMAF mean ours / anchor (Δ) | VMAF p5 ours / anchor (Δ) | ladder CPU s ours / anchors (ratio) | verdict |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
let cases = 0;
let passed = 0;
const scratch = await mkdtemp(join(tmpdir(), 'media-bench-stream-quality-'));
try {
  for (const name of clips) {
    const clip = await corpusClip(name);
    const input = await readTestInput(clip.path);
    for (const encoder of encoders) {
      const ladder = defaultLadder(input.video, encoder).map((r) => ({
        height: r.height,
        bitrateKbps: r.bitrateKbps,
      }));
      const dir = join(scratch, `${name}-${encoder}`);
      const c = await compareLadderWithAnchor(tools, { clipPath: clip.path, encoder, ladder }, dir);
      const cpu = `${f1(c.oursCpuSeconds)} / ${f1(c.anchorCpuSeconds)} (${f2(c.oursCpuSeconds / c.anchorCpuSeconds)})`;
      for (const [k, rung] of c.rungs.entries()) {
        const o = c.ours[k];
        const first = c.anchor[k];
        const again = c.again[k];
        if (!o || !first) throw new Error(`rung ${rung.name} not measured`);
        const t = rung.bitrateKbps;
        const { ceiling, bitrate } = bitrateVerdict(t, o.kbps, first, again);
        // Picture against the anchor's run nearest the target (`*`), unless at the ceiling.
        const a = referenceOf(t, first, again);
        const anchorRate =
          `${f1(first.kbps)} (${pct(first.kbps, t)})` +
          (again
            ? `, at ${again.targetKbps}: ${f1(again.kbps)} (${pct(again.kbps, t)})${a === again ? '*' : ''}`
            : '') +
          (ceiling ? ' ceiling' : '');
        const miss = [
          bitrate ? '' : 'bitrate',
          o.quality.vmafMean >= a.quality.vmafMean - RULES.vmafMeanDrop ? '' : 'vmafMean',
          o.quality.vmafP5 >= a.quality.vmafP5 - RULES.vmafP5Drop ? '' : 'vmafP5',
          c.oursCpuSeconds <= c.anchorCpuSeconds * RULES.cpuRatio ? '' : 'cpu',
        ].filter(Boolean);
        cases++;
        if (miss.length === 0) passed++;
        console.log(
          `| ${name} (${clip.kind}) | ${encoder} | ${rung.name} | ${t} | ${f1(o.kbps)} (${pct(o.kbps, t)}) / ${anchorRate} | ` +
            `${f2(o.quality.vmafMean)} / ${f2(a.quality.vmafMean)} (${f2(o.quality.vmafMean - a.quality.vmafMean)}) | ` +
            `${f2(o.quality.vmafP5)} / ${f2(a.quality.vmafP5)} (${f2(o.quality.vmafP5 - a.quality.vmafP5)}) | ` +
            `${k === 0 ? cpu : ''} | ${miss.length ? `FAIL ${miss.join(', ')}` : 'pass'} |`,
        );
      }
    }
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}
console.log(`\n${passed}/${cases} rungs pass every rule`);
