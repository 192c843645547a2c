// What the stream playback tests share: the player page, the clip, the cases a player checks of
// a published ladder, the content types docs/api.md promises and a stream submitted by POST /streams.
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import type { AllInOne } from '../../../services/all-in-one/start-all-in-one.ts';
import { generateClip } from '../../support/generate-clip.ts';
import type { StreamFileServer } from '../../support/stream-file-server.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

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
export const playerMounts = {
  '/players/hls/': join(root, 'node_modules/hls.js/dist/'),
  '/players/dash/': join(root, 'node_modules/dashjs/dist/modern/umd/'),
  '/page/': join(root, 'test/integration/stream-playback/'),
};

/**
 * Headless Chromium on the player page of `server` (mounted with {@link playerMounts}).
 * `hostRules`: Chromium's `--host-resolver-rules`, to reach an emulator under a public host name.
 */
export async function openPlayer(
  server: StreamFileServer,
  o: { hostRules?: string } = {},
): Promise<{ browser: Browser; page: Page }> {
  const browser = await puppeteer.launch({
    executablePath: process.env['TEST_CHROMIUM'] ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--autoplay-policy=no-user-gesture-required',
      '--mute-audio',
      ...(o.hostRules ? [`--host-resolver-rules=${o.hostRules}`] : []),
    ],
  });
  const page = await browser.newPage();
  await page.goto(`${server.url}/page/page.html`);
  return { browser, page };
}

/** The 12 s clip every playback case plays: 852x480 with audio and noise. */
export const makeClip = (path: string): Promise<void> =>
  generateClip(path, { seconds: 12, width: 852, height: 480, audio: true, noise: true });

/**
 * What a player sees of a 12 s ladder in 2 s segments with a thumbnail every 2 s, published under
 * `base()` (a URL ending in /) with rungs `rungs()`.
 */
export function playbackCases(
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

/** The content type of each published object, as docs/api.md states them. */
export function promisedType(key: string): string {
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

/**
 * The case that every object published under a prefix has the type docs/api.md states for it:
 * `stored()` gives each key under the prefix and the content type its store holds for it.
 */
export function contentTypeCase(
  stored: () => Promise<Record<string, string>>,
  objects: () => number,
): void {
  it('every published object has the content type docs/api.md states for it', async () => {
    const got = await stored();
    const keys = Object.keys(got);
    expect(keys).to.have.length(objects());
    const promised = Object.fromEntries(keys.map((k) => [k, promisedType(k)]));
    expect(got).to.deep.equal(promised);
    const extensions = new Set(keys.map((k) => k.slice(k.lastIndexOf('.'))));
    expect([...extensions]).to.have.members(['.m3u8', '.mpd', '.mp4', '.m4s', '.jpg', '.vtt']);
  });
}

/** What a stream job's result says of what it published. */
export interface PublishedStream {
  rungs: { width: number; height: number }[];
  objects: number;
  ladderChoice?: { mode: string; reason?: string };
}

/**
 * Submits `body` (with `apiKey`) to POST /streams and waits for the job: its `stream` result
 * once it succeeded; a failure with the job's status otherwise.
 */
export async function streamSubmitted(
  app: AllInOne,
  apiKey: string,
  body: Record<string, unknown>,
): Promise<PublishedStream> {
  const res = await fetch(`${app.ingress.url}/streams`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiKey, ...body }),
  });
  expect(res.status, await res.clone().text()).to.equal(200);
  const { id } = (await res.json()) as { id: string };
  const status = await finished(app, apiKey, id);
  expect(status['status'], JSON.stringify(status)).to.equal('succeeded');
  return (status['result'] as { stream: PublishedStream }).stream;
}

/** Polls GET /jobs/:id until the job has succeeded or failed. */
async function finished(
  app: AllInOne,
  apiKey: string,
  id: string,
): Promise<Record<string, unknown>> {
  const end = Date.now() + 480_000;
  for (;;) {
    const res = await fetch(`${app.ingress.url}/jobs/${id}`, { headers: { 'x-api-key': apiKey } });
    const status = (await res.json()) as Record<string, unknown>;
    if (status['status'] === 'succeeded' || status['status'] === 'failed') return status;
    if (Date.now() > end)
      throw new Error(`job ${id} not done after 480 s: ${JSON.stringify(status)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
