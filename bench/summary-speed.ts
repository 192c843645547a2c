// Side-by-side benchmark, one run: a summary job (download from a local file server → probe →
// analysis → selection → render → ffprobe verify → upload) against one full-resolution decode of
// the same input by ffmpeg, interleaved. The input (720p, scenes of uneven length with audio,
// x264 veryfast with B-frames) is generated once and cached under the OS temp dir.
// Besides wall-clock times it reports CPU seconds (this process and the ffmpeg/ffprobe it ran,
// from /proc): on a machine shared with other work, wall times swing with the load, CPU much less.
// After the rounds it runs the last MP4 job's render parts again, as run and with every clip from
// its keyframe, and prints what the job would take without the decoding before its clips.
// Usage: npm run bench:summary -- [rounds=1] [minutes=10] [formats=mp4,gif] (a format may name a
// width: gif@480)
import { execFile } from 'node:child_process';
import { access, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { JobRequested, JobResult } from '../services/core/contracts/types.generated.ts';
import type { JobContext } from '../services/core/worker/job-handler.ts';
import { silentLogger } from '../services/core/observability/logger.ts';
import { readInput } from '../services/core/media/read-input.ts';
import { analyseVideo } from '../services/summarizer/analyse-video.ts';
import { createSummaryHandler } from '../services/summarizer/handle-summary.ts';
import { startTestServer } from '../test/support/file-server.ts';
import { generateScenes, UNEVEN_SCENES, type SceneSpec } from '../test/support/generate-scenes.ts';
import { testMediaJobDeps } from '../test/support/media-job-deps.ts';
import { median } from './stats.ts';

const run = promisify(execFile);
const rounds = Number(process.argv[2] ?? 1);
const minutes = Number(process.argv[3] ?? 10);
/** What to summarise: a format, with a width after `@` or the input's width. */
const formats = (process.argv[4] ?? 'mp4,gif').split(',');
const ffmpeg = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
/** UNEVEN_SCENES over and over, each pass with the sources shifted, cut to the length asked. */
function scenesFor(seconds: number): SceneSpec[] {
  const scenes: SceneSpec[] = [];
  let total = 0;
  for (let i = 0; total < seconds - 1e-9; i++) {
    const shape = UNEVEN_SCENES[i % UNEVEN_SCENES.length];
    const source =
      UNEVEN_SCENES[(i + 3 * Math.floor(i / UNEVEN_SCENES.length)) % UNEVEN_SCENES.length]?.source;
    if (!shape || !source) break;
    const length = Math.min(shape.seconds, seconds - total);
    const burst =
      shape.burst && shape.burst.at + shape.burst.seconds <= length ? { burst: shape.burst } : {};
    scenes.push({ source, seconds: Math.round(length * 100) / 100, ...burst });
    total += length;
  }
  return scenes;
}

async function cachedInput(): Promise<string> {
  const dir = join(tmpdir(), 'media-service-bench');
  const path = join(dir, `summary-input-${minutes}min-720p-v1.mp4`);
  if (
    await access(path).then(
      () => true,
      () => false,
    )
  )
    return path;
  await mkdir(dir, { recursive: true });
  console.log(
    `generating the ${minutes}-minute 720p input once (cached as ${path}); this takes a few minutes`,
  );
  const partial = `${path}.${process.pid}.partial`;
  await generateScenes(partial, scenesFor(minutes * 60), {
    width: 1280,
    height: 720,
    audio: true,
    preset: 'veryfast',
    threads: 2,
  });
  await rename(partial, path);
  return path;
}

/**
 * CPU seconds used so far by this process and by its children that have exited (user + system;
 * utime, stime, cutime and cstime of /proc/self/stat, in clock ticks of 1/100 s).
 */
async function cpuSeconds(): Promise<number> {
  const stat = await readFile('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14–17 of the file; fields[0] here is field 3 (state).
  return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0) / 100;
}

/** One ffmpeg or ffprobe a job ran: what it was, and its wall and CPU seconds. */
interface Invocation {
  what: string;
  wall: number;
  cpu: number;
}
let invocations: Invocation[] = [];
/** Times each call; calls that overlap (the analysis's stretches) are reported as one, with their CPU together. */
function timedTool<A extends unknown[], R>(
  what: (args: A) => string,
  tool: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  let running = 0;
  let group: { what: string; started: number; cpu: number } | undefined;
  return async (...args) => {
    if (running++ === 0)
      group = { what: what(args), started: performance.now(), cpu: await cpuSeconds() };
    try {
      return await tool(...args);
    } finally {
      if (--running === 0 && group) {
        const ended = performance.now();
        invocations.push({
          what: group.what,
          wall: (ended - group.started) / 1000,
          cpu: (await cpuSeconds()) - group.cpu,
        });
      }
    }
  };
}

const input = await cachedInput();
const files = await startTestServer();
await run('cp', [input, join(files.dir, 'input.mp4')]);
const baseDeps = testMediaJobDeps({
  maxInputBytes: 8 * 1024 ** 3,
  stallTimeoutMs: 120_000,
  threads: 2,
});
/** The render runs (arguments) of the last MP4 job, for the bound below. */
let mp4Renders: string[][] = [];
// An MP4 render part is the one run that writes a .mov (the join writes the .mp4).
const recordRender = (args: readonly string[]): void => {
  if (args.at(-1)?.endsWith('.mov')) mp4Renders.push([...args]);
};
const deps = {
  ...baseDeps,
  runFfmpeg: timedTool(
    ([args]) =>
      // A GIF's palette, from the analysis's samples.
      args.some((a) => a.includes('palettegen'))
        ? 'palette'
        : args.includes('rawvideo')
          ? 'analysis'
          : // The join of an MP4 rendered in parts (their renders side by side are one "render").
            args.includes('concat')
            ? 'join'
            : 'render',
    (...call: Parameters<typeof baseDeps.runFfmpeg>) => {
      recordRender(call[0]);
      return baseDeps.runFfmpeg(...call);
    },
  ),
  probe: timedTool(() => 'probe', baseDeps.probe),
};
const handler = createSummaryHandler(deps);
/** When each stage of the last job began, from its progress reports (seconds since its start). */
let stages: Record<string, number> = {};
let jobStarted = 0;
const ctx: JobContext = {
  signal: new AbortController().signal,
  attempt: 1,
  kind: 'summary',
  span: (_name, work) => work(),
  log: silentLogger,
  progress: (percent, stage) => {
    // The handler reports 5–35 % while it analyses and 35–95 % while it renders.
    const name = stage === 'encode' ? (percent < 35 ? 'analyse' : 'render') : stage;
    stages[name] ??= (performance.now() - jobStarted) / 1000;
  },
  openSecret: () => undefined,
  waiting: () => undefined,
  begin: () => Promise.resolve(),
};

/** Wall and CPU seconds of a step. */
interface Cost {
  wall: number;
  cpu: number;
}
async function timed<T>(work: () => Promise<T>): Promise<[Cost, T]> {
  const cpu = await cpuSeconds();
  const started = performance.now();
  const value = await work();
  const wall = (performance.now() - started) / 1000;
  return [{ wall, cpu: (await cpuSeconds()) - cpu }, value];
}

const fullDecode = (): Promise<[Cost, unknown]> =>
  timed(() =>
    run(ffmpeg, [
      '-hide_banner',
      '-loglevel',
      'error',
      '-nostdin',
      '-threads',
      '2',
      '-i',
      input,
      '-f',
      'null',
      '-',
    ]),
  );
const summary = (name: string, i: number): Promise<[Cost, JobResult]> =>
  timed(() => {
    const [format, width] = name.split('@') as ['mp4' | 'gif', string | undefined];
    const job: JobRequested = {
      jobId: '00000000-0000-4000-8000-00000000be0c',
      kind: 'summary',
      orgId: 'bench',
      attempt: 1,
      submittedAt: new Date().toISOString(),
      input: { url: `${files.url}/files/input.mp4` },
      output: { url: `${files.url}/files/summary-${i}.${format}` },
      summary: { format, ...(width ? { width: Number(width) } : {}) },
    };
    stages = {};
    invocations = [];
    if (format === 'mp4') mp4Renders = [];
    jobStarted = performance.now();
    return handler(job, ctx);
  });

/** Seconds spent in each stage of the last job: download (with probe), analyse, render (with verify), upload. */
function stageTimes(total: number): string {
  const order = ['download', 'analyse', 'render', 'upload'].filter((s) => stages[s] !== undefined);
  return order
    .map((s, i) => `${s} ${((stages[order[i + 1] ?? ''] ?? total) - (stages[s] ?? 0)).toFixed(1)}`)
    .join(', ');
}
/** The job's ffmpeg and ffprobe runs in order: wall seconds / CPU seconds. */
const invocationTimes = (): string =>
  invocations.map((i) => `${i.what} ${i.wall.toFixed(1)}/${i.cpu.toFixed(1)}`).join(', ');

const analysisOnly = async (): Promise<Cost> => {
  const dir = join(tmpdir(), `media-bench-${process.pid}`);
  await mkdir(dir, { recursive: true });
  const info = await readInput(deps, ctx.signal, { inputPath: input, workDir: dir });
  const [cost] = await timed(() =>
    analyseVideo(deps, {
      input: info,
      scratchPath: join(dir, 'a.pcm'),
      threads: 2,
      signal: ctx.signal,
    }),
  );
  await rm(dir, { recursive: true, force: true });
  return cost;
};

const decode: Cost[] = [];
const analysis: Cost[] = [];
const jobs: Record<string, Cost[]> = Object.fromEntries(formats.map((f) => [f, []]));
const results: Record<string, JobResult> = {};
for (let i = 0; i < rounds; i++) {
  // Alternate which goes first, so neither always runs on a warmer machine.
  const steps = [
    async (): Promise<void> => {
      const [cost] = await fullDecode();
      decode.push(cost);
      console.log(
        `round ${i + 1} full decode: ${cost.wall.toFixed(2)} s, ${cost.cpu.toFixed(2)} CPU s (load ${loadavg()[0]?.toFixed(1)})`,
      );
    },
    async (): Promise<void> => void analysis.push(await analysisOnly()),
  ];
  for (const format of formats)
    steps.push(async () => {
      const [cost, result] = await summary(format, i);
      jobs[format]?.push(cost);
      results[format] = result;
      console.log(
        `round ${i + 1} ${format}: ${cost.wall.toFixed(2)} s, ${cost.cpu.toFixed(2)} CPU s (stages: ${stageTimes(cost.wall)}; wall/CPU s: ${invocationTimes()})`,
      );
    });
  for (const step of i % 2 === 0 ? steps : [...steps].reverse()) await step();
}
/** A job's ratios to the full decode of its own round, so each compares runs made minutes apart at most. */
const ratios = (costs: Cost[], key: keyof Cost): number[] =>
  costs.map((c, i) => c[key] / (decode[i]?.[key] ?? NaN));
const range = (xs: number[]): string =>
  `${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)}`;
const d = median(decode.map((c) => c.wall));
const dCpu = median(decode.map((c) => c.cpu));
console.log(
  `input: ${minutes} min 1280x720 25 fps, H.264 (x264 veryfast, B-frames) + AAC; ${rounds} round(s), interleaved; ${cpus().length} cores; load average at the end ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
console.log(
  '| step | wall s (median) | / full decode (median; per round, lowest–highest) | CPU s (median) | CPU / full decode |',
);
console.log('|---|---|---|---|---|');
const row = (name: string, costs: Cost[]): void => {
  const wall = median(costs.map((c) => c.wall));
  const cpu = median(costs.map((c) => c.cpu));
  console.log(
    `| ${name} | ${wall.toFixed(2)} | ${median(ratios(costs, 'wall')).toFixed(3)} (${range(ratios(costs, 'wall'))}) | ${cpu.toFixed(2)} | ${median(ratios(costs, 'cpu')).toFixed(3)} |`,
  );
};
console.log(
  `| full-resolution decode (ffmpeg -threads 2 -i … -f null -) | ${d.toFixed(2)} | 1.000 | ${dCpu.toFixed(2)} | 1.000 |`,
);
row('analysis alone (2 fps, 64×36)', analysis);
for (const format of formats) {
  const r = results[format];
  const detail = r
    ? ` (${r.segments?.length ?? 0} segments, ${r.durationSeconds} s, ${r.width}×${r.height}, ${r.sizeBytes} bytes)`
    : '';
  row(`${format} summary job${detail}`, jobs[format] ?? []);
}

/**
 * A bound on the MP4 job: its render parts run again side by side, as the job ran them, then with
 * every clip starting at the keyframe at or before its start, so that nothing is decoded before a
 * clip. The difference is what seeking costs the render: the selection places clips on the active
 * moments of a scene, which are seldom at a keyframe (x264 puts them up to 10 s apart).
 */
async function renderBound(): Promise<void> {
  const renders = mp4Renders;
  const job = jobs['mp4'];
  if (renders.length === 0 || !job) return;
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-select_streams',
    'v:0',
    '-skip_frame',
    'nokey',
    '-show_entries',
    'frame=pts_time',
    '-of',
    'csv=p=0',
    input,
  ]);
  const keyframes = stdout
    .split('\n')
    .map((line) => Number.parseFloat(line))
    .filter(Number.isFinite);
  const keyframeBefore = (t: number): number => keyframes.filter((k) => k <= t + 1e-6).at(-1) ?? t;
  const dir = join(tmpdir(), `media-bench-render-${process.pid}`);
  await mkdir(dir, { recursive: true });
  const again = async (fromKeyframes: boolean): Promise<Cost> => {
    const [cost] = await timed(() =>
      Promise.all(
        renders.map((args, k) =>
          run(ffmpeg, [
            '-nostdin',
            '-loglevel',
            'error',
            ...args.map((a, i) => {
              if (i === args.length - 1) return join(dir, `part${k}.mov`);
              if (args[i - 1] === '-i') return input;
              if (args[i - 1] === '-ss' && fromKeyframes) return String(keyframeBefore(Number(a)));
              return a;
            }),
          ]),
        ),
      ),
    );
    return cost;
  };
  const asRun = await again(false);
  const fromKeyframes = await again(true);
  await rm(dir, { recursive: true, force: true });
  const saved = asRun.wall - fromKeyframes.wall;
  const bound = (median(job.map((c) => c.wall)) - saved) / d;
  console.log(
    `MP4 render parts again: as the job ran them ${asRun.wall.toFixed(2)} s (${asRun.cpu.toFixed(2)} CPU s); every clip from the keyframe at or before its start ${fromKeyframes.wall.toFixed(2)} s (${fromKeyframes.cpu.toFixed(2)} CPU s). The MP4 job with no decoding before its clips would take about ${bound.toFixed(3)} of the full decode.`,
  );
}
await renderBound();
await files.close();
