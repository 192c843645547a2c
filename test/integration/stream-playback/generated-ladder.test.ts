import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { readInput } from '../../../services/core/media/read-input.ts';
import { defaultLadder, type Rung } from '../../../services/streamer/ladder.ts';
import { planThumbnails } from '../../../services/streamer/thumbnails.ts';
import { writeLadder } from '../../../services/streamer/write-ladder.ts';
import { testMediaJobDeps } from '../../support/media-job-deps.ts';
import { startStreamFileServer, type StreamFileServer } from '../../support/stream-file-server.ts';
import { makeClip, openPlayer, playbackCases, playerMounts } from './stream-playback-fixture.ts';

const deps = testMediaJobDeps();

// The ladder writer alone, served from disk; what POST /streams publishes to each store plays in
// stores.test.ts.
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
