import { expect } from 'chai';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import type { AllInOne } from '../../../services/all-in-one/start-all-in-one.ts';
import { startTestAllInOne } from '../../support/in-process-service.ts';
import {
  clockwiseRotation,
  onlyTopLeftRed,
  probe,
  videoStream,
  type Corners,
} from '../../support/media-checks.ts';
import { startStreamFileServer, type StreamFileServer } from '../../support/stream-file-server.ts';
import { generateUploadCorpus, type UploadCase } from '../../support/upload-corpus.ts';
import {
  openPlayer,
  playerMounts,
  streamSubmitted,
  type PublishedStream,
} from './stream-playback-fixture.ts';

const API_KEY = 'playback-portrait-key-0123456789';

interface RungPicture {
  level: { width: number; height: number };
  size: [number, number];
  corners: Corners;
  errors: string[];
}

/**
 * Phone clips of the upload corpus: a portrait picture with a red marker top-left, stored turned
 * on its side with a display matrix asking players to turn it back (clockwise 90° and 270°).
 * Streamed through POST /streams, every rung must be portrait and show the marker top-left
 * when Chromium plays it: a service that ignored the matrix would publish landscape rungs, or
 * portrait rungs of the picture lying on its side, with the marker in another corner.
 */
describe('a portrait phone clip streamed by POST /streams plays upright in Chromium, every rung', function () {
  this.timeout(300_000);
  const names = ['phone-portrait-90', 'phone-portrait-270'];
  const results: Record<string, Promise<PublishedStream>> = {};
  let cases: UploadCase[];
  let pages: StreamFileServer;
  let files: StreamFileServer;
  let app: AllInOne;
  let dataDir: string;
  let browser: Browser;
  let page: Page;

  before(async () => {
    pages = await startStreamFileServer({ mounts: playerMounts });
    files = await startStreamFileServer();
    // Generating checks that plain ffmpeg (which applies the matrix) shows the marker top-left.
    await mkdir(join(pages.dir, 'corpus'));
    cases = await generateUploadCorpus(join(pages.dir, 'corpus'), names);
    dataDir = await mkdtemp(join(tmpdir(), 'media-playback-portrait-'));
    app = await startTestAllInOne(dataDir, { API_KEYS: `${API_KEY}:org-portrait` });
    for (const c of cases) {
      results[c.name] = streamSubmitted(app, API_KEY, {
        inputUrl: `${pages.url}/corpus/${c.file}`,
        outputUrl: `${files.url}/${c.name}/`,
        segmentSeconds: 1,
        quality: { report: false },
      });
      results[c.name]?.catch(() => undefined);
    }
    ({ browser, page } = await openPlayer(pages));
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    await Promise.all([pages?.close(), files?.close()]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  for (const name of names)
    describe(name, () => {
      let stream: PublishedStream;
      let upload: UploadCase;
      before(async () => {
        stream = await (results[name] ?? Promise.reject(new Error(`${name} was not submitted`)));
        upload = cases.find((c) => c.name === name) as UploadCase;
      });

      it('the input is stored on its side and asks players to turn it', async () => {
        const video = videoStream(await probe(join(pages.dir, 'corpus', upload.file)));
        if (!video?.width || !video.height) throw new Error(`${upload.file} has no video size`);
        expect(video.width).to.be.above(video.height);
        expect(clockwiseRotation(video)).to.equal(upload.expect.rotation);
        expect(upload.expect.rotation % 180).to.equal(90);
      });

      it('every rung is portrait, its short side one of the default ladder', () => {
        const { displayWidth, displayHeight } = upload.expect;
        expect(displayHeight).to.be.above(displayWidth);
        expect(stream.rungs.map((r) => r.width)).to.deep.equal([360, 240]);
        for (const r of stream.rungs)
          expect(r.width / r.height).to.be.closeTo(displayWidth / displayHeight, 0.01);
      });

      it('hls.js plays each rung at its size with the marker top-left, and only there', async () => {
        const pictures = (await page.evaluate(
          (url) =>
            (
              globalThis as unknown as { hlsRungPictures(u: string): Promise<unknown> }
            ).hlsRungPictures(url),
          `${files.url}/${name}/master.m3u8`,
        )) as RungPicture[];
        const sizes = stream.rungs.map((r) => [r.width, r.height]);
        expect(pictures.map((p) => [p.level.width, p.level.height])).to.have.deep.members(sizes);
        for (const p of pictures) {
          expect(p.errors).to.deep.equal([]);
          expect(p.size).to.deep.equal([p.level.width, p.level.height]);
          expect(onlyTopLeftRed(p.corners), JSON.stringify(p)).to.equal(true);
        }
      });
    });
});
