import { expect } from 'chai';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { readInput } from '../../../services/core/media/read-input.ts';
import { defaultLadder } from '../../../services/streamer/ladder.ts';
import { writeLadder } from '../../../services/streamer/write-ladder.ts';
import { testMediaJobDeps } from '../../support/media-job-deps.ts';
import { startStreamFileServer, type StreamFileServer } from '../../support/stream-file-server.ts';
import { makeClip, openPlayer, playerMounts } from './stream-playback-fixture.ts';

const deps = testMediaJobDeps();

/** Two caption tracks of the 12 s clip, a cue of each at its own time. */
const TRACKS = [
  { language: 'en', label: 'English', cue: [3, 5, 'Hello at three'] as const },
  { language: 'fr', label: 'Français', cue: [7.5, 9, 'Bonjour à sept et demie'] as const },
];

const vttTime = (s: number): string => `00:00:${s.toFixed(3).padStart(6, '0')}`;
const vtt = ([start, end, text]: readonly [number, number, string]): string =>
  `WEBVTT\n\n${vttTime(start)} --> ${vttTime(end)}\n${text}\n`;

interface Shown {
  label: string;
  language: string;
  at: number;
  texts: string[];
}
interface Captions {
  tracks: Record<string, unknown>[];
  element: { kind: string; label: string; language: string }[];
  shown: Shown[];
  errors: string[];
}

/** What a player showed: each track's cue at its time, in the track of its language. */
function expectCuesShown(shown: Shown[]): void {
  expect(shown.map((s) => [s.language, s.texts])).to.deep.equal(
    TRACKS.map((t) => [t.language, [t.cue[2]]]),
  );
  shown.forEach((s, k) => expect(s.at).to.be.closeTo((TRACKS[k]?.cue[0] ?? -1) + 0.5, 0.3));
}

/** `play` is hlsCaptions or dashCaptions of page-captions.js. */
async function captionsIn(page: Page, play: string, url: string): Promise<Captions> {
  const times = TRACKS.map((t) => t.cue[0] + 0.5);
  return (await page.evaluate(
    (fn, u, at) =>
      (globalThis as unknown as Record<string, (u: string, at: number[]) => Promise<unknown>>)[
        fn
      ]?.(u, at),
    play,
    url,
    times,
  )) as Captions;
}

// The ladder writer with two caption tracks, served from disk; the stream published by the
// service with the input's and a caller's captions plays in captions-service.test.ts.
describe('caption renditions play in headless Chromium (hls.js, dash.js)', function () {
  this.timeout(180_000);
  let server: StreamFileServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    server = await startStreamFileServer({ mounts: playerMounts });
    const work = join(server.dir, 'work');
    await mkdir(work);
    await makeClip(join(work, 'in.mp4'));
    const captions = await Promise.all(
      TRACKS.map(async (t, k) => {
        const path = join(work, `caption-${k}.vtt`);
        await writeFile(path, vtt(t.cue));
        return { path, language: t.language, label: t.label };
      }),
    );
    const signal = new AbortController().signal;
    const input = await readInput(deps, signal, { inputPath: join(work, 'in.mp4'), workDir: work });
    await writeLadder((args) => deps.runFfmpeg(args, { signal, stallTimeoutMs: 30_000 }), {
      input,
      rungs: defaultLadder(input.video),
      encoder: 'h264',
      segmentSeconds: 2,
      outDir: join(server.dir, 'stream'),
      passLogPrefix: join(work, 'ladder-pass'),
      threads: 2,
      formats: ['hls', 'dash'],
      captions,
    });
    ({ browser, page } = await openPlayer(server));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('hls.js lists the SUBTITLES group and shows each track cue at its time', async () => {
    const got = await captionsIn(page, 'hlsCaptions', `${server.url}/stream/master.m3u8`);
    expect(got.errors).to.deep.equal([]);
    expect(got.tracks).to.deep.equal(
      TRACKS.map((t) => ({ name: t.label, lang: t.language, default: false })),
    );
    expect(got.element.map((e) => [e.kind, e.label, e.language])).to.deep.equal(
      TRACKS.map((t) => ['subtitles', t.label, t.language]),
    );
    expectCuesShown(got.shown);
    expect(got.shown.map((s) => s.label)).to.deep.equal(TRACKS.map((t) => t.label));
  });

  it('dash.js lists the text adaptation sets and shows each track cue at its time', async () => {
    const got = await captionsIn(page, 'dashCaptions', `${server.url}/stream/manifest.mpd`);
    expect(got.errors).to.deep.equal([]);
    expect(got.tracks).to.deep.equal(
      TRACKS.map((t) => ({ lang: t.language, labels: [t.label], roles: ['subtitle'] })),
    );
    // dash.js labels the element's tracks by adaptation set id; its own list has the labels.
    expect(got.element.map((e) => e.language)).to.deep.equal(TRACKS.map((t) => t.language));
    expectCuesShown(got.shown);
  });
});
