import { expect } from 'chai';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { defaultLadder, type Rung } from '../../services/streamer/ladder.ts';
import { readInput } from '../../services/core/media/read-input.ts';
import { planThumbnails } from '../../services/streamer/thumbnails.ts';
import { writeLadder } from '../../services/streamer/write-ladder.ts';
import { generateClip } from '../support/generate-clip.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
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

describe('a generated ladder plays in headless Chromium (hls.js, dash.js)', function () {
  this.timeout(180_000);
  let server: StreamFileServer;
  let browser: Browser;
  let page: Page;
  let rungs: Rung[];

  before(async () => {
    server = await startStreamFileServer({
      mounts: {
        '/players/hls/': join(root, 'node_modules/hls.js/dist/'),
        '/players/dash/': join(root, 'node_modules/dashjs/dist/modern/umd/'),
        '/page/': join(root, 'test/integration/stream-playback/'),
      },
    });
    const work = join(server.dir, 'work');
    await mkdir(work);
    await generateClip(join(work, 'in.mp4'), {
      seconds: 12,
      width: 852,
      height: 480,
      audio: true,
      noise: true,
    });
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
    browser = await puppeteer.launch({
      executablePath: process.env['TEST_CHROMIUM'] ?? '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--autoplay-policy=no-user-gesture-required', '--mute-audio'],
    });
    page = await browser.newPage();
    await page.goto(`${server.url}/page/page.html`);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const sizes = () => rungs.map((r) => `${r.width}x${r.height}`);
  const sizeOf = (s: [number, number]) => `${s[0]}x${s[1]}`;

  it('hls.js: plays muted, time advances, each rung forced in turn, a seek to the middle', async () => {
    const played = (await page.evaluate(
      (url) => (globalThis as unknown as { playHls(u: string): Promise<unknown> }).playHls(url),
      `${server.url}/stream/master.m3u8`,
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
    const played = (await page.evaluate(
      (url) => (globalThis as unknown as { playDash(u: string): Promise<unknown> }).playDash(url),
      `${server.url}/stream/manifest.mpd`,
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
    const thumbs = (await page.evaluate(
      (url) =>
        (globalThis as unknown as { loadThumbnails(u: string): Promise<unknown> }).loadThumbnails(
          url,
        ),
      `${server.url}/stream/thumbnails/thumbnails.vtt`,
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
});
