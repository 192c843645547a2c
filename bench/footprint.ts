// Memory footprint of the all-in-one process (RSS of the Node process, read from /proc; ffmpeg's
// children are not counted): idle after start, and at its peak while transcoding a generated
// input of at least 1 GB (640×360 raw video in Matroska, served over HTTP, output back by PUT).
// Idle is measured twice: a first start with an empty NODE_COMPILE_CACHE, then a start that finds
// it filled (as the image's warmed cache, or any restart), which skips the TypeScript stripper.
// The service runs with the Node options of `npm start` and the image (SERVICE_NODE_ARGS).
// Usage: npm run bench:footprint -- [inputGiB=1.05]
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestServer } from '../test/support/file-server.ts';
import { freePort, spawnService, type SpawnedService } from '../test/support/spawn-service.ts';
import { memoryMiB } from './proc.ts';

const run = promisify(execFile);
const inputGiB = Number(process.argv[2] ?? 1.05);
const KEY = 'footprint-key-0123456789abcdef';
const FRAME_BYTES = 640 * 360 * 1.5;
const main = new URL('../services/all-in-one/main.ts', import.meta.url).pathname;

const rssMiB = async (pid: number): Promise<number> => (await memoryMiB(pid)).rss;

/** Generated once and kept, like the summary benchmark's input. */
async function rawInput(): Promise<string> {
  const dir = join(tmpdir(), 'media-service-bench');
  await mkdir(dir, { recursive: true });
  const frames = Math.ceil((inputGiB * 1024 ** 3) / FRAME_BYTES);
  const path = join(dir, `raw-640x360-${frames}.mkv`);
  const exists = await stat(path).catch(() => undefined);
  if (exists) return path;
  console.log(`generating ${frames} raw frames (${((frames * FRAME_BYTES) / 1e9).toFixed(2)} GB)…`);
  await run('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-f', 'lavfi'],
    ...['-i', `testsrc2=size=640x360:rate=25,format=yuv420p`, '-frames:v', String(frames)],
    ...['-c:v', 'rawvideo', '-f', 'matroska', '-y', path],
  ]);
  return path;
}

const input = await rawInput();
const inputBytes = (await stat(input)).size;
const files = await startTestServer();
await symlink(input, join(files.dir, 'input.mkv'));
const dataDir = await mkdtemp(join(tmpdir(), 'media-footprint-'));
const port = await freePort();
const env = {
  PORT: String(port),
  API_KEYS: `${KEY}:bench`,
  ALLOW_PRIVATE_NETWORKS: 'true',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'info',
  NODE_COMPILE_CACHE: join(dataDir, 'compile-cache'),
};

/** Starts the service; RSS right after start and after 10 s idle. */
async function startAndIdle(): Promise<{
  service: SpawnedService;
  afterStart: number;
  idle: number;
}> {
  const service = spawnService(main, env);
  await service.waitForLog((r) => r['msg'] === 'ingress.listening', 60_000);
  const pid = service.child.pid ?? NaN;
  const afterStart = await rssMiB(pid);
  let idle = 0;
  for (let i = 0; i < 10; i += 1) {
    await new Promise((r) => setTimeout(r, 1000));
    idle = await rssMiB(pid);
  }
  return { service, afterStart, idle };
}

const cold = await startAndIdle();
await cold.service.stop(60_000);
const warm = await startAndIdle();
const { service } = warm;
try {
  const pid = service.child.pid ?? NaN;
  const started = Date.now();
  const res = await fetch(`http://127.0.0.1:${port}/transcode`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiKey: KEY,
      inputUrl: `${files.url}/files/input.mkv`,
      outputUrl: `${files.url}/files/out.mp4`,
      encoder: 'h264',
      container: 'mp4',
      bitrateKbps: '1000',
      successUrl: `${files.url}/callbacks/done`,
      failureUrl: `${files.url}/callbacks/done`,
    }),
  });
  const { id } = (await res.json()) as { id: string };
  let peak = 0;
  const sampler = setInterval(() => {
    void rssMiB(pid).then((v) => (peak = Math.max(peak, v)));
  }, 100);
  const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 3_600_000);
  clearInterval(sampler);
  if (callback.body['status'] !== 'succeeded')
    throw new Error(`the job did not succeed: ${JSON.stringify(callback.body)}`);
  const output = await stat(join(files.dir, 'out.mp4'));
  const row = (what: string, mib: number, goal = ''): string =>
    `| ${what.padEnd(52)} | ${mib.toFixed(0).padStart(9)} | ${goal.padEnd(5)} |`;
  console.log(`\n| ${'measure'.padEnd(52)} | RSS (MiB) | goal  |`);
  console.log(`| ${'-'.repeat(52)} | --------- | ----- |`);
  console.log(row('all-in-one right after start, empty compile cache', cold.afterStart));
  console.log(row('all-in-one idle 10 s, empty compile cache', cold.idle));
  console.log(row('all-in-one right after start, warm compile cache', warm.afterStart));
  console.log(row('all-in-one idle 10 s, warm compile cache', warm.idle, '< 100'));
  console.log(
    row(`peak while transcoding a ${(inputBytes / 1e9).toFixed(2)} GB input`, peak, '< 200'),
  );
  console.log(
    `\njob: ${((Date.now() - started) / 1000).toFixed(1)} s, output ${(output.size / 1e6).toFixed(1)} MB; RSS sampled every 100 ms, ffmpeg not counted`,
  );
} finally {
  await service.stop(60_000);
  await files.close();
  await rm(dataDir, { recursive: true, force: true });
}
