import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import type { TestServer } from './file-server.ts';
import { ffprobe, generateClip, generateImage } from './generate-clip.ts';

const run = promisify(execFile);

/** Mean RGB of a region of a video's first frame, read back with ffmpeg. */
export async function meanColor(
  path: string,
  r: { x: number; y: number; w: number; h: number },
): Promise<[number, number, number]> {
  const { stdout } = await run(
    process.env['TEST_FFMPEG'] ?? 'ffmpeg',
    ['-v', 'error', '-i', path, '-vf', `crop=${r.w}:${r.h}:${r.x}:${r.y}`, '-frames:v', '1'].concat(
      ['-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'],
    ),
    { encoding: 'buffer', maxBuffer: 1024 * 1024 },
  );
  const sum = [0, 0, 0];
  for (let i = 0; i < stdout.length; i++) sum[i % 3] = (sum[i % 3] ?? 0) + (stdout[i] ?? 0);
  const n = stdout.length / 3;
  return [(sum[0] ?? 0) / n, (sum[1] ?? 0) / n, (sum[2] ?? 0) / n];
}

/** PUTs a pure red png under `name` for the key's organisation; the answer's status and body. */
export async function uploadRedLogo(
  app: AllInOne,
  files: TestServer,
  key: string,
  name: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const path = join(files.dir, `${name}.png`);
  await generateImage(path, { width: 64, height: 64, color: 'red' });
  const res = await fetch(`${app.ingress.url}/watermarks/${name}`, {
    method: 'PUT',
    headers: { 'x-api-key': key, 'content-type': 'image/png' },
    body: await readFile(path),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/**
 * A transcode with `imageName` as a 64×64 watermark at the top left, fully opaque; resolves with
 * the callback body (and, on success, the output checked with ffprobe and its pixels).
 */
export async function transcodeWithNamedWatermark(
  app: AllInOne,
  files: TestServer,
  key: string,
  imageName: string,
  output: string,
): Promise<Record<string, unknown>> {
  await generateClip(join(files.dir, 'wm-input.mp4'), { seconds: 2, width: 320, height: 240 });
  const res = await fetch(`${app.ingress.url}/transcode`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiKey: key,
      inputUrl: `${files.url}/files/wm-input.mp4`,
      outputUrl: `${files.url}/files/${output}`,
      encoder: 'h264',
      container: 'mp4',
      bitrateKbps: '1000',
      watermark: { imageName, width: 64, height: 64, position: 'topLeft', opacity: 1 },
      successUrl: `${files.url}/callbacks/ok`,
      failureUrl: `${files.url}/callbacks/fail`,
    }),
  });
  expect(res.status).to.equal(200);
  const { id } = (await res.json()) as { id: string };
  return (await files.waitForCallback((c) => c.body['jobId'] === id, 120_000)).body;
}

/** The output carries the red logo at the top left (16 px margin) and the input elsewhere. */
export async function expectRedLogoTopLeft(path: string): Promise<void> {
  const probed = await ffprobe(path);
  const video = probed.streams.find((s) => s.codec_type === 'video');
  expect([video?.codec_name, video?.width, video?.height]).to.deep.equal(['h264', 320, 240]);
  const [r, g, b] = await meanColor(path, { x: 32, y: 32, w: 32, h: 32 });
  expect(r, 'red inside the logo').to.be.greaterThan(200);
  expect(g + b, 'no green or blue inside the logo').to.be.lessThan(80);
  const outside = await meanColor(path, { x: 200, y: 150, w: 32, h: 32 });
  expect(outside[1] + outside[2], 'the input outside the logo').to.be.greaterThan(80);
}
