import { expect } from 'chai';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketCorsCommand,
  PutBucketPolicyCommand,
} from '@aws-sdk/client-s3';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { defaultLadder, type Rung } from '../../services/streamer/ladder.ts';
import { readInput } from '../../services/core/media/read-input.ts';
import { planThumbnails } from '../../services/streamer/thumbnails.ts';
import { writeLadder } from '../../services/streamer/write-ladder.ts';
import { generateClip } from '../support/generate-clip.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { storageEmulators } from '../support/storage-emulators.ts';
import { startStreamFileServer, type StreamFileServer } from '../support/stream-file-server.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const deps = testMediaJobDeps();

interface Played {
  first: { advanced: number; size: [number, number] };
  forced: { advanced: number; size: [number, number] }[];
  seek: { middle: number; at: number; advanced: number };
  duration: number;
  errors: string[];
}
type HlsPlayed = Played & { levels: { width: number; height: number; bitrate: number }[] };
type DashPlayed = Played & { reps: { width: number; height: number; bandwidth: number }[] };

/** The page of the players, served beside the stream or on an origin of its own. */
const playerMounts = {
  '/players/hls/': join(root, 'node_modules/hls.js/dist/'),
  '/players/dash/': join(root, 'node_modules/dashjs/dist/modern/umd/'),
  '/page/': join(root, 'test/integration/stream-playback/'),
};

async function openPlayer(server: StreamFileServer): Promise<{ browser: Browser; page: Page }> {
  const browser = await puppeteer.launch({
    executablePath: process.env['TEST_CHROMIUM'] ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--autoplay-policy=no-user-gesture-required', '--mute-audio'],
  });
  const page = await browser.newPage();
  await page.goto(`${server.url}/page/page.html`);
  return { browser, page };
}

/** The 12 s clip every case plays: 852x480 with audio and noise. */
const makeClip = (path: string): Promise<void> =>
  generateClip(path, { seconds: 12, width: 852, height: 480, audio: true, noise: true });

/**
 * What a player sees of a 12 s ladder in 2 s segments with a thumbnail every 2 s, published under
 * `base()` (a URL ending in /) with rungs `rungs()`.
 */
function playbackCases(
  page: () => Page,
  base: () => string,
  rungs: () => readonly { width: number; height: number }[],
): void {
  const sizes = () => rungs().map((r) => `${r.width}x${r.height}`);
  const sizeOf = (s: [number, number]) => `${s[0]}x${s[1]}`;

  it('hls.js: plays muted, time advances, each rung forced in turn, a seek to the middle', async () => {
    const played = (await page().evaluate(
      (url) => (globalThis as unknown as { playHls(u: string): Promise<unknown> }).playHls(url),
      `${base()}master.m3u8`,
    )) as HlsPlayed;
    expect(played.errors).to.deep.equal([]);
    expect(played.first.advanced).to.be.at.least(1.5);
    expect(sizes()).to.include(sizeOf(played.first.size));
    expect(played.levels.map((l) => `${l.width}x${l.height}`)).to.have.members(sizes());
    expect(played.forced.map((f) => sizeOf(f.size))).to.have.members(sizes());
    for (const f of played.forced) expect(f.advanced).to.be.at.least(0.5);
    expect(played.duration).to.be.closeTo(12, 0.2);
    expect(played.seek.at).to.be.at.least(played.seek.middle);
    expect(played.seek.advanced).to.be.at.least(0.5);
  });

  it('dash.js: plays muted, time advances, each representation forced in turn, a seek to the middle', async () => {
    const played = (await page().evaluate(
      (url) => (globalThis as unknown as { playDash(u: string): Promise<unknown> }).playDash(url),
      `${base()}manifest.mpd`,
    )) as DashPlayed;
    expect(played.errors).to.deep.equal([]);
    expect(played.first.advanced).to.be.at.least(1.5);
    expect(sizes()).to.include(sizeOf(played.first.size));
    expect(played.reps.map((r) => `${r.width}x${r.height}`)).to.have.members(sizes());
    expect(played.forced.map((f) => sizeOf(f.size))).to.have.members(sizes());
    expect(played.duration).to.be.closeTo(12, 0.2);
    expect(played.seek.at).to.be.at.least(played.seek.middle);
    expect(played.seek.advanced).to.be.at.least(0.5);
  });

  it('the thumbnail track loads: a cue per 2 s, its sheet an image holding the tile', async () => {
    const thumbs = (await page().evaluate(
      (url) =>
        (globalThis as unknown as { loadThumbnails(u: string): Promise<unknown> }).loadThumbnails(
          url,
        ),
      `${base()}thumbnails/thumbnails.vtt`,
    )) as {
      cues: { start: number; end: number; text: string }[];
      sheet: [number, number];
      tile: number[];
    };
    expect(thumbs.cues).to.have.length(6);
    expect(thumbs.cues[5]).to.deep.include({ start: 10, end: 12 });
    expect(thumbs.sheet).to.deep.equal([1600, 900]);
    expect(thumbs.tile).to.deep.equal([0, 0, 160, 90]);
  });
}

describe('a generated ladder plays in headless Chromium (hls.js, dash.js)', function () {
  this.timeout(180_000);
  let server: StreamFileServer;
  let browser: Browser;
  let page: Page;
  let rungs: Rung[];

  before(async () => {
    server = await startStreamFileServer({ mounts: playerMounts });
    const work = join(server.dir, 'work');
    await mkdir(work);
    await makeClip(join(work, 'in.mp4'));
    const signal = new AbortController().signal;
    const input = await readInput(deps, signal, { inputPath: join(work, 'in.mp4'), workDir: work });
    rungs = defaultLadder(input.video);
    await writeLadder((args) => deps.runFfmpeg(args, { signal, stallTimeoutMs: 30_000 }), {
      input,
      rungs,
      encoder: 'h264',
      segmentSeconds: 2,
      outDir: join(server.dir, 'stream'),
      passLogPrefix: join(work, 'ladder-pass'),
      threads: 2,
      formats: ['hls', 'dash'],
      thumbnails: planThumbnails(
        { intervalSeconds: 2 },
        input.video.display,
        12,
        rungs[0] ?? input.video.display,
      ),
    });
    ({ browser, page } = await openPlayer(server));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  playbackCases(
    () => page,
    () => `${server.url}/stream/`,
    () => rungs,
  );
});

/** The content type of each published object, as docs/api.md states them. */
function promisedType(key: string): string {
  const extension = key.slice(key.lastIndexOf('.') + 1);
  if (extension === 'mp4') return key.includes('/audio/') ? 'audio/mp4' : 'video/mp4';
  const types: Record<string, string> = {
    m3u8: 'application/vnd.apple.mpegurl',
    mpd: 'application/dash+xml',
    m4s: 'video/iso.segment',
    jpg: 'image/jpeg',
    vtt: 'text/vtt',
  };
  return types[extension] ?? `(no type promised for .${extension})`;
}

const API_KEY = 'playback-bucket-key-0123456789';

describe('a stream submitted by POST /streams to the S3 emulator plays from the bucket in Chromium', function () {
  this.timeout(300_000);
  const bucket = `play-${Math.random().toString(36).slice(2, 8)}`;
  const prefix = 'streams/film/';
  let server: StreamFileServer;
  let app: AllInOne;
  let dataDir: string;
  let browser: Browser;
  let page: Page;
  let emulators: ReturnType<typeof storageEmulators>;
  let result: { rungs: { width: number; height: number }[]; objects: number };

  before(async () => {
    emulators = storageEmulators();
    const { s3 } = emulators;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    // README: serve the prefix with CORS (the page's origin is not the bucket's).
    await s3.send(
      new PutBucketCorsCommand({
        Bucket: bucket,
        CORSConfiguration: {
          CORSRules: [
            { AllowedOrigins: ['*'], AllowedMethods: ['GET', 'HEAD'], AllowedHeaders: ['*'] },
          ],
        },
      }),
    );
    // The player reads without credentials: the bucket's objects are public.
    const policy = {
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: '*',
          Action: 's3:GetObject',
          Resource: `arn:aws:s3:::${bucket}/*`,
        },
      ],
    };
    await s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: JSON.stringify(policy) }));
    server = await startStreamFileServer({ mounts: playerMounts });
    await makeClip(join(server.dir, 'in.mp4'));
    dataDir = await mkdtemp(join(tmpdir(), 'media-playback-bucket-'));
    app = await startTestAllInOne(dataDir, {
      API_KEYS: `${API_KEY}:org-play`,
      S3_ENDPOINT: emulators.s3Endpoint,
    });
    const res = await fetch(`${app.ingress.url}/streams`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiKey: API_KEY,
        inputUrl: `${server.url}/in.mp4`,
        outputUrl: `s3://${bucket}/${prefix}`,
        outputCreds: { region: 'us-east-1', accessKeyId: 'test', secretAccessKey: 'test-secret' },
        segmentSeconds: 2,
        thumbnails: { intervalSeconds: 2 },
        quality: { report: false },
      }),
    });
    expect(res.status).to.equal(200);
    const { id } = (await res.json()) as { id: string };
    const status = await finished(app, id);
    expect(status['status'], JSON.stringify(status)).to.equal('succeeded');
    result = (status['result'] as { stream: typeof result }).stream;
    ({ browser, page } = await openPlayer(server));
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    await server?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('every published object has the content type docs/api.md states for it', async () => {
    const listed = await emulators.s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }),
    );
    const keys = (listed.Contents ?? []).map((o) => o.Key ?? '');
    expect(keys).to.have.length(result.objects);
    const got: Record<string, string> = {};
    const promised: Record<string, string> = {};
    for (const key of keys) {
      const head = await emulators.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      got[key] = head.ContentType ?? '(none)';
      promised[key] = promisedType(key);
    }
    expect(got).to.deep.equal(promised);
    const extensions = new Set(keys.map((k) => k.slice(k.lastIndexOf('.'))));
    expect([...extensions]).to.have.members(['.m3u8', '.mpd', '.mp4', '.m4s', '.jpg', '.vtt']);
  });

  playbackCases(
    () => page,
    () => `${emulators.s3Endpoint}/${bucket}/${prefix}`,
    () => result.rungs,
  );
});

/** Polls GET /jobs/:id until the job has succeeded or failed. */
async function finished(app: AllInOne, id: string): Promise<Record<string, unknown>> {
  const end = Date.now() + 240_000;
  for (;;) {
    const res = await fetch(`${app.ingress.url}/jobs/${id}`, { headers: { 'x-api-key': API_KEY } });
    const status = (await res.json()) as Record<string, unknown>;
    if (status['status'] === 'succeeded' || status['status'] === 'failed') return status;
    if (Date.now() > end)
      throw new Error(`job ${id} not done after 240 s: ${JSON.stringify(status)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
