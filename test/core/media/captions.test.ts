// The 1 MiB cap on a caption file read from a caller's URL (docs/api.md, Captions: "at most
// 1 MiB"), through prepareCaptions and the real http store against a loopback server: a file of
// exactly the cap is taken, one a byte over is refused with input_too_large and a message that
// names it by place and label, whether the server declares its length or streams it unsized.
import { expect } from 'chai';
import http from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CAPTION_FILE_MAX_BYTES,
  prepareCaptions,
  type CaptionDeps,
  type CaptionJob,
} from '../../../services/core/media/captions.ts';
import { createFfmpegRunner } from '../../../services/core/media/run-ffmpeg.ts';
import { createGuardedHttp } from '../../../services/core/net/guarded-http.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';
import { createHttpStore } from '../../../services/core/storage/http-store.ts';
import { MediaError } from '../../../services/core/errors.ts';
import { mediaInfo } from '../../support/job-input.ts';

const CUE = (n: number): string => `${n}\n00:00:01,000 --> 00:00:02,000\nLine ${n}\n\n`;

/** A valid SubRip file of exactly `bytes` bytes: short cues, the last one's text padded. */
function srtOfSize(bytes: number): Buffer {
  let text = '';
  for (let n = 1; text.length + 200 < bytes; n++) text += CUE(n);
  const last = '999999\n00:00:03,000 --> 00:00:04,000\n';
  const padded = text + last + 'x'.repeat(bytes - text.length - last.length - 1) + '\n';
  const file = Buffer.from(padded, 'utf8');
  if (file.length !== bytes) throw new Error(`made ${file.length} bytes, not ${bytes}`);
  return file;
}

/**
 * Serves `/sized/<n>` with a Content-Length and `/unsized/<n>` chunked (no length), each a
 * SubRip file of n bytes.
 */
async function startCaptionServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const [, how, size] = (req.url ?? '').split('/');
    const body = srtOfSize(Number(size));
    if (how === 'sized') res.writeHead(200, { 'content-length': body.length });
    else res.writeHead(200, { 'content-type': 'application/x-subrip' });
    for (let at = 0; at < body.length; at += 64 * 1024)
      res.write(body.subarray(at, at + 64 * 1024));
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('captions: a caption file by URL (services/core/media/captions.ts)', function () {
  this.timeout(30_000);
  let server: Awaited<ReturnType<typeof startCaptionServer>>;
  let workDir: string;
  const deps: CaptionDeps = {
    http: createHttpStore(createGuardedHttp({ allowPrivateNetworks: true })),
    runFfmpeg: createFfmpegRunner(process.env['TEST_FFMPEG'] ?? 'ffmpeg', {
      memoryLimitBytes: 2 * 1024 ** 3,
    }),
    stallTimeoutMs: 10_000,
    log: silentLogger,
  };
  const job = (url: string): CaptionJob => ({
    captions: { files: [{ url, language: 'en', label: 'English' }] },
    inputPath: join(workDir, 'input.mp4'),
    info: mediaInfo({ width: 320, height: 240 }, { durationSeconds: 10 }),
    workDir,
    signal: new AbortController().signal,
  });

  before(async () => {
    server = await startCaptionServer();
    workDir = await mkdtemp(join(tmpdir(), 'captions-cap-'));
  });
  after(async () => {
    await server.close();
    await rm(workDir, { recursive: true, force: true });
  });

  it('the cap is 1 MiB, as the docs say', () => {
    expect(CAPTION_FILE_MAX_BYTES).to.equal(1024 * 1024);
  });

  for (const how of ['sized', 'unsized'] as const) {
    it(`a file of exactly 1 MiB is taken (${how})`, async () => {
      const tracks = await prepareCaptions(deps, job(`${server.url}/${how}/${1024 * 1024}`));
      expect(tracks.map((t) => [t.source, t.index, t.label])).to.deep.equal([
        ['file', 0, 'English'],
      ]);
      const vtt = await readFile(tracks[0]?.path ?? '', 'utf8');
      expect(vtt).to.match(/^WEBVTT/);
      expect(vtt).to.include('00:00:03.000 --> 00:00:04.000');
    });

    it(`a file one byte over 1 MiB fails with input_too_large, named by place and label (${how})`, async () => {
      const url = `${server.url}/${how}/${1024 * 1024 + 1}`;
      const error = await prepareCaptions(deps, job(url)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, 'the over-cap file was taken').to.be.instanceOf(MediaError);
      const { code, message } = error as MediaError;
      expect(code).to.equal('input_too_large');
      expect(message).to.match(/^captions\.files\[0\] \("English"\) could not be fetched: /);
      expect(message).to.include(String(1024 * 1024));
      expect(message).to.not.include(server.url);
      expect(message).to.not.include(workDir);
    });
  }
});
