// Side-by-side benchmark, one run: a four-rung ladder (1080p, 720p, 480p, 360p; H.264, 4 s
// segments) of a 1080p input made by a stream job through the whole all-in-one service (HTTP
// submit → bus → download → one ffmpeg with `split` → verify → publish every object →
// callback) against the same four encodes run as four separate bare ffmpeg commands (each
// decoding the input for its one rung, with the very arguments of a one-rung ladder: both
// passes), in turn; then the same job with its default quality report of every rung, whose
// cost the bare commands do not pay.
// Usage: npm run bench:stream -- [seconds=60] [rounds=1]
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { requestedLadder } from '../services/streamer/ladder.ts';
import { startTestAllInOne } from '../test/support/in-process-service.ts';
import { buildLadderPasses } from '../services/streamer/build-ladder-args.ts';
import { startTestServer } from '../test/support/file-server.ts';
import { generateClip } from '../test/support/generate-clip.ts';
import { readTestInput } from '../test/support/job-input.ts';
import { startStreamFileServer } from '../test/support/stream-file-server.ts';
import { median } from './stats.ts';

const run = promisify(execFile);
const seconds = Number(process.argv[2] ?? 60);
const rounds = Number(process.argv[3] ?? 1);
const KEY = 'bench-key-0123456789abcdef';
const LADDER = [
  { height: 1080, bitrateKbps: 5000 },
  { height: 720, bitrateKbps: 2800 },
  { height: 480, bitrateKbps: 1400 },
  { height: 360, bitrateKbps: 800 },
];
const hooks = await startTestServer();
const files = await startStreamFileServer();
const dataDir = await mkdtemp(join(tmpdir(), 'media-bench-stream-'));
const inputPath = join(files.dir, 'input.mp4');
await generateClip(inputPath, { seconds, width: 1920, height: 1080, audio: true, noise: true });
const app = await startTestAllInOne(dataDir, {
  API_KEYS: `${KEY}:bench`,
});

/** One stream job; `report` false asks for no quality report (the encode alone, as the bare commands). */
async function viaService(round: string, report: boolean): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${app.ingress.url}/streams`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiKey: KEY,
      inputUrl: `${files.url}/input.mp4`,
      outputUrl: `${files.url}/out/${round}/`,
      ladder: LADDER,
      ...(report ? {} : { quality: { report: false } }),
      successUrl: `${hooks.url}/callbacks/ok`,
      failureUrl: `${hooks.url}/callbacks/fail`,
    }),
  });
  const { id } = (await res.json()) as { id: string };
  const callback = await hooks.waitForCallback((c) => c.body['jobId'] === id, 1_800_000);
  if (callback.body['status'] !== 'succeeded')
    throw new Error(`job failed: ${JSON.stringify(callback.body)}`);
  return (performance.now() - started) / 1000;
}

/** The four rungs, one bare ffmpeg each, one after the other, with the cores the service has. */
async function separate(round: number): Promise<number> {
  const input = await readTestInput(inputPath);
  const rungs = requestedLadder(input.video, LADDER);
  const started = performance.now();
  for (const rung of rungs) {
    const outDir = join(dataDir, `bare-${round}-${rung.name}`);
    await mkdir(join(outDir, rung.name), { recursive: true });
    await mkdir(join(outDir, 'audio'), { recursive: true });
    const passes = buildLadderPasses({
      input,
      rungs: [rung],
      encoder: 'h264',
      segmentSeconds: 4,
      outDir,
      passLogPrefix: join(dataDir, `bare-${round}-${rung.name}-pass`),
      threads: availableParallelism(),
    });
    for (const args of passes)
      await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args]);
  }
  return (performance.now() - started) / 1000;
}

const service: number[] = [];
const reported: number[] = [];
const bare: number[] = [];
for (let round = 0; round < rounds; round++) {
  bare.push(await separate(round));
  service.push(await viaService(`${round}`, false));
  reported.push(await viaService(`${round}-report`, true));
}
const [s, r, b] = [median(service), median(reported), median(bare)];
console.log(
  `input: ${seconds}s 1920x1080 25 fps with temporal noise and audio; ${rounds} round(s); ${availableParallelism()} cores`,
);
console.log('| four-rung ladder | seconds (median) |');
console.log('| --- | --- |');
console.log(`| four separate bare ffmpeg encodes | ${b.toFixed(1)} |`);
console.log(`| one stream job through the service, no quality report | ${s.toFixed(1)} |`);
console.log(`| service / separate | ${(s / b).toFixed(2)} |`);
console.log(`| the same job with its default quality report of every rung | ${r.toFixed(1)} |`);
console.log(`| with the report / separate | ${(r / b).toFixed(2)} |`);
await app.close();
await files.close();
await hooks.close();
await rm(dataDir, { recursive: true, force: true });
