// Side-by-side benchmark, one run: a transcode job through the whole all-in-one service (HTTP
// submit → bus → download → ffmpeg → verify → upload → callback) against the bare ffmpeg runs
// it makes (both passes, from buildTranscodeArgs, then the quality report's metrics run, from
// qualityArgs, with the libvmaf ffmpeg the service uses), on the same clip, interleaved. Also
// reports bitrate accuracy per encoder.
// Usage: npm run bench:transcode -- [rounds=3] [seconds=10] [encoder]
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestAllInOne } from '../test/support/in-process-service.ts';
import { buildTranscodeArgs } from '../services/transcoder/build-transcode-args.ts';
import { loadConfig } from '../services/core/config.ts';
import { inputReference, qualityArgs } from '../services/core/media/quality-args.ts';
import type { TranscodeSpec } from '../services/core/contracts/types.generated.ts';
import { startTestServer } from '../test/support/file-server.ts';
import { generateClip } from '../test/support/generate-clip.ts';
import { readTestInput } from '../test/support/job-input.ts';
import { median } from './stats.ts';

const run = promisify(execFile);
const rounds = Number(process.argv[2] ?? 3);
const seconds = Number(process.argv[3] ?? 10);
const only = process.argv[4];
const KEY = 'bench-key-0123456789abcdef';
const files = await startTestServer();
const dataDir = await mkdtemp(join(tmpdir(), 'media-bench-'));
const input = join(files.dir, 'input.mp4');
await generateClip(input, { seconds, width: 1280, height: 720, audio: true, noise: true });
const app = await startTestAllInOne(dataDir, {
  API_KEYS: `${KEY}:bench`,
});

async function viaService(spec: TranscodeSpec, name: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${app.ingress.url}/transcode`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiKey: KEY,
      inputUrl: `${files.url}/files/input.mp4`,
      outputUrl: `${files.url}/files/${name}`,
      ...spec,
      successUrl: `${files.url}/callbacks/${name}`,
      failureUrl: `${files.url}/callbacks/${name}`,
    }),
  });
  const { id } = (await res.json()) as { id: string };
  const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 600_000);
  if (callback.body['status'] !== 'succeeded')
    throw new Error(`job failed: ${JSON.stringify(callback.body)}`);
  return (performance.now() - started) / 1000;
}

// The quality report's ffmpeg and VMAF sampling, as the service's configuration has them.
const config = loadConfig(process.env);
const vmafFfmpeg = config.vmafFfmpegPath;

/**
 * The same ffmpeg runs the service makes, one after the other, with nothing around them: both
 * passes, then the quality report's metrics.
 */
async function bare(spec: TranscodeSpec, out: string): Promise<number> {
  const jobInput = await readTestInput(input);
  const size = { width: 1280, height: 720 };
  const passes = buildTranscodeArgs({
    spec,
    input: jobInput,
    outputPath: out,
    size,
    threads: 2,
    passLogPrefix: join(dataDir, 'bare-pass'),
  });
  const metrics = qualityArgs({
    targets: [
      {
        outputPath: out,
        logs: {
          psnr: join(dataDir, 'bare-psnr.log'),
          ssim: join(dataDir, 'bare-ssim.log'),
          vmaf: join(dataDir, 'bare-vmaf.csv'),
        },
      },
    ],
    reference: inputReference(jobInput, size),
    vmafSubsample: config.qualityVmafSubsample,
    threads: 2,
  });
  const started = performance.now();
  for (const args of passes)
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args]);
  await run(vmafFfmpeg, ['-hide_banner', '-loglevel', 'error', '-nostdin', ...metrics]);
  return (performance.now() - started) / 1000;
}

async function videoKbps(path: string): Promise<number> {
  const { stdout } = await run(
    'ffprobe',
    [
      '-v',
      'error',
      '-select_streams',
      'v:0',
      '-show_entries',
      'packet=size',
      '-of',
      'csv=p=0',
      path,
    ],
    { maxBuffer: 64 << 20 },
  );
  const bytes = stdout
    .split('\n')
    .filter(Boolean)
    .reduce((t, l) => t + Number(l), 0);
  return (bytes * 8) / 1000 / seconds;
}

const specs: TranscodeSpec[] = [
  { encoder: 'h264', container: 'mp4', bitrateKbps: '2000' },
  { encoder: 'h265', container: 'mp4', bitrateKbps: '2000' },
  { encoder: 'vp8', container: 'webm', bitrateKbps: '2000' },
  { encoder: 'vp9', container: 'webm', bitrateKbps: '2000' },
];
console.log(
  `clip: ${seconds}s 1280x720 with temporal noise and audio; ${rounds} rounds, interleaved; 2 cores`,
);
console.log(
  '| encoder/container | bare ffmpeg (s, median) | service job (s, median) | service / bare | video kbps vs target |',
);
console.log('|---|---|---|---|---|');
for (const spec of specs.filter((s) => !only || s.encoder === only)) {
  const b: number[] = [];
  const s: number[] = [];
  for (let i = 0; i < rounds; i++) {
    // Alternate which goes first, so neither always runs on a warmer machine.
    const runBare = async (): Promise<void> =>
      void b.push(await bare(spec, join(dataDir, `bare.${spec.container}`)));
    const runService = async (): Promise<void> =>
      void s.push(await viaService(spec, `svc-${spec.encoder}-${i}.${spec.container}`));
    if (i % 2 === 0) await runBare().then(runService);
    else await runService().then(runBare);
  }
  const kbps = await videoKbps(join(files.dir, `svc-${spec.encoder}-0.${spec.container}`));
  const target = Number(spec.bitrateKbps);
  console.log(
    `| ${spec.encoder}/${spec.container} | ${median(b).toFixed(2)} | ${median(s).toFixed(2)} | ${(median(s) / median(b)).toFixed(3)} | ${kbps.toFixed(0)} (${(((kbps - target) / target) * 100).toFixed(1)} %) |`,
  );
}
console.log(`input size ${(await stat(input)).size} bytes`);
await app.close();
await files.close();
await rm(dataDir, { recursive: true, force: true });
