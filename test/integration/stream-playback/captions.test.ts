import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { readInput } from '../../../services/core/media/read-input.ts';
import { defaultLadder } from '../../../services/streamer/ladder.ts';
import { writeLadder } from '../../../services/streamer/write-ladder.ts';
import { testMediaJobDeps } from '../../support/media-job-deps.ts';
import { startStreamFileServer, type StreamFileServer } from '../../support/stream-file-server.ts';
import { makeClip, openPlayer, playerMounts } from './stream-playback-fixture.ts';
import {
  captionsIn,
  expectDashCaptions,
  expectHlsCaptions,
  vtt,
  type ExpectedTrack,
} from './caption-playback.ts';

const deps = testMediaJobDeps();

/** Two caption tracks of the 12 s clip, a cue of each at its own time. */
const TRACKS: ExpectedTrack[] = [
  { language: 'en', label: 'English', cue: [3, 5, 'Hello at three'] },
  { language: 'fr', label: 'Français', cue: [7.5, 9, 'Bonjour à sept et demie'] },
];

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
    const got = await captionsIn(page, 'hlsCaptions', `${server.url}/stream/master.m3u8`, TRACKS);
    expectHlsCaptions(got, TRACKS);
  });

  it('dash.js lists the text adaptation sets and shows each track cue at its time', async () => {
    const got = await captionsIn(page, 'dashCaptions', `${server.url}/stream/manifest.mpd`, TRACKS);
    expectDashCaptions(got, TRACKS);
  });
});
