// The fixed table against the per-title ladder (issue 41), side by side in one run: for each
// clip of the quality corpus, a stream job (the streamer's handler, real ffmpeg, a local file
// server) with `ladder: "fixed"` and one with `ladder: "per-title"`, both with the quality report
// of every rung (VMAF at the rung's own size). Reports each rung's delivered kb/s and VMAF mean,
// the ladder's total video kb/s, and the CPU seconds of the probe (its encodes and its VMAF run)
// against those of the ladder's two passes. CPU is the children's user+system time around each
// ffmpeg, which the handler runs one at a time.
// Usage: npm run bench:ladder -- [clips=animation,camera,slides,fast-motion] [encoder=h264]
import { readFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobRequested, StreamResult } from '../services/core/contracts/types.generated.ts';
import type { FfmpegRunner } from '../services/core/media/run-ffmpeg.ts';
import type { LadderEncoder } from '../services/streamer/ladder.ts';
import { createStreamHandler } from '../services/streamer/handle-stream.ts';
import { testJobContext } from '../test/support/job-context.ts';
import { testMediaJobDeps, testQualityTools } from '../test/support/media-job-deps.ts';
import { corpusClip } from '../test/support/quality-corpus.ts';
import { startStreamFileServer } from '../test/support/stream-file-server.ts';

const clips = (process.argv[2] ?? 'animation,camera,slides,fast-motion').split(',');
const encoder = (process.argv[3] ?? 'h264') as LadderEncoder;
if (!process.env['TEST_VMAF_FFMPEG'])
  throw new Error('TEST_VMAF_FFMPEG is not set (see scripts/test-services/vmaf.sh env)');

/** Seconds of CPU the process's waited-for children used so far (cutime + cstime). */
function childrenCpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

type Phase = 'probe' | 'probeMetrics' | 'ladder' | 'other';
const cpu: Record<Phase, number> = { probe: 0, probeMetrics: 0, ladder: 0, other: 0 };
/** What an ffmpeg run is for, from its arguments (a probe's metrics run reads its files). */
function phaseOf(args: readonly string[]): Phase {
  if (args.some((a) => a.includes('/probe-')))
    return args.some((a) => a.includes('libvmaf')) ? 'probeMetrics' : 'probe';
  if (args.includes('hls') || args.includes('-pass') || args.some((a) => a.includes('pass=')))
    return 'ladder';
  return 'other';
}
const counted =
  (runner: FfmpegRunner): FfmpegRunner =>
  async (args, options) => {
    const before = childrenCpuSeconds();
    try {
      await runner(args, options);
    } finally {
      cpu[phaseOf(args)] += childrenCpuSeconds() - before;
    }
  };

const quality = testQualityTools();
const deps = testMediaJobDeps({
  maxInputBytes: 1024 ** 3,
  quality: {
    runFfmpeg: counted(quality.runFfmpeg),
    vmaf:
      'runFfmpeg' in quality.vmaf
        ? { ...quality.vmaf, runFfmpeg: counted(quality.vmaf.runFfmpeg) }
        : quality.vmaf,
  },
});
const handler = createStreamHandler({ ...deps, runFfmpeg: counted(deps.runFfmpeg) });

const f1 = (x: number): string => x.toFixed(1);
const f2 = (x: number): string => x.toFixed(2);

console.log(
  `| clip | ladder (${encoder}) | rungs: name target → delivered kb/s, VMAF | total kb/s | VMAF per rung | probe CPU s (encodes + VMAF) | ladder CPU s | probe / ladder |`,
);
console.log('|---|---|---|---|---|---|---|---|');
const files = await startStreamFileServer();
try {
  for (const name of clips) {
    const clip = await corpusClip(name);
    await copyFile(clip.path, join(files.dir, `${name}.mp4`));
    const results: Record<string, StreamResult | undefined> = {};
    for (const ladder of ['fixed', 'per-title'] as const) {
      for (const k of Object.keys(cpu) as Phase[]) cpu[k] = 0;
      const job: JobRequested = {
        jobId: '00000000-0000-4000-8000-000000000041',
        kind: 'stream',
        orgId: 'o',
        attempt: 1,
        submittedAt: new Date().toISOString(),
        input: { url: `${files.url}/${name}.mp4` },
        output: { url: `${files.url}/out/${name}-${ladder}/` },
        stream: { ladder, encoder, formats: encoder === 'vp9' ? ['dash'] : ['hls', 'dash'] },
      };
      const result = (await handler(job, testJobContext('stream'))).stream;
      results[ladder] = result;
      const rungs = result?.rungs ?? [];
      const total = rungs.reduce((n, r) => n + r.averageKbps, 0);
      const cells = rungs
        .map((r) => `${r.name} ${Math.round(r.targetKbps)} → ${f1(r.averageKbps)}`)
        .join(', ');
      const vmaf = rungs.map((r) => f2(r.quality?.vmaf?.mean ?? NaN)).join(' / ');
      const probe = cpu.probe + cpu.probeMetrics;
      const share = cpu.ladder > 0 ? f2(probe / cpu.ladder) : '–';
      const split = probe > 0 ? ` (${f1(cpu.probe)} + ${f1(cpu.probeMetrics)})` : '';
      console.log(
        `| ${name} | ${ladder} | ${cells} | ${f1(total)} | ${vmaf} | ${f1(probe)}${split} | ${f1(cpu.ladder)} | ${share} |`,
      );
      if (ladder === 'per-title')
        console.error(`${name} choice: ${JSON.stringify(result?.ladderChoice)}`);
    }
    const fixedTotal = (results['fixed']?.rungs ?? []).reduce((n, r) => n + r.averageKbps, 0);
    const ptTotal = (results['per-title']?.rungs ?? []).reduce((n, r) => n + r.averageKbps, 0);
    console.log(`| ${name} | per-title / fixed bits | | ${f2(ptTotal / fixedTotal)} | | | | |`);
  }
} finally {
  await files.close();
}
