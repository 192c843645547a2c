import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'puppeteer-core';
import type { AllInOne } from '../../../services/all-in-one/start-all-in-one.ts';
import { startTestAllInOne } from '../../support/in-process-service.ts';
import { startStreamFileServer, type StreamFileServer } from '../../support/stream-file-server.ts';
import { makeClip, openPlayer, playerMounts, streamSubmitted } from './stream-playback-fixture.ts';
import {
  captionsIn,
  expectDashCaptions,
  expectHlsCaptions,
  vtt,
  type Cue,
  type ExpectedTrack,
} from './caption-playback.ts';

const run = promisify(execFile);
const FFMPEG = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
const API_KEY = 'playback-captions-key-0123456789';
/** The part of the 12 s input streamed: its cues come 2 s earlier in the stream. */
const TRIM = { startSeconds: 2, endSeconds: 12 };
const INPUT_CUE: Cue = [5, 7, 'Input cue at five'];
const CALLER_CUE: Cue = [9, 10.5, 'Caller cue at nine'];
const shifted = ([start, end, text]: Cue): Cue => [start - 2, end - 2, text];
/**
 * The input's mov_text track (tagged eng, no title: labelled by its language; en in the
 * manifests, as BCP 47 has it), then the file.
 */
const TRACKS: ExpectedTrack[] = [
  { language: 'en', label: 'eng', cue: shifted(INPUT_CUE) },
  { language: 'de', label: 'Deutsch', cue: shifted(CALLER_CUE) },
];

interface StreamCaption {
  language: string;
  label: string;
  url: string;
  playlistUrl?: string;
}

/** The 12 s clip with a mov_text subtitle stream of one cue, tagged eng. */
async function clipWithSubtitles(dir: string): Promise<string> {
  await makeClip(join(dir, 'clip.mp4'));
  await writeFile(join(dir, 'input.vtt'), vtt(INPUT_CUE));
  const out = join(dir, 'with-subs.mp4');
  await run(FFMPEG, [
    ...['-hide_banner', '-loglevel', 'error', '-i', join(dir, 'clip.mp4')],
    ...['-i', join(dir, 'input.vtt'), '-map', '0', '-map', '1', '-c', 'copy'],
    ...['-c:s', 'mov_text', '-metadata:s:s:0', 'language=eng', '-y', out],
  ]);
  return out;
}

/**
 * A trimmed stream through POST /streams from an MP4 with a subtitle stream, with a caller's
 * caption file: the result lists both renditions, their objects have the type docs/api.md
 * states, and hls.js and dash.js list both tracks and show each cue at its trimmed time.
 */
describe('captions of a stream published by POST /streams play in hls.js and dash.js', function () {
  this.timeout(300_000);
  let pages: StreamFileServer;
  let files: StreamFileServer;
  let app: AllInOne;
  let dataDir: string;
  let browser: Browser;
  let page: Page;
  let captions: StreamCaption[];

  before(async () => {
    pages = await startStreamFileServer({ mounts: playerMounts });
    files = await startStreamFileServer();
    await mkdir(join(pages.dir, 'in'));
    await clipWithSubtitles(join(pages.dir, 'in'));
    await writeFile(join(pages.dir, 'in', 'caller.vtt'), vtt(CALLER_CUE));
    dataDir = await mkdtemp(join(tmpdir(), 'media-playback-captions-'));
    app = await startTestAllInOne(dataDir, { API_KEYS: `${API_KEY}:org-captions` });
    const stream = await streamSubmitted(app, API_KEY, {
      inputUrl: `${pages.url}/in/with-subs.mp4`,
      outputUrl: `${files.url}/film/`,
      segmentSeconds: 2,
      trim: TRIM,
      captions: {
        files: [{ url: `${pages.url}/in/caller.vtt`, language: 'de', label: 'Deutsch' }],
      },
      quality: { report: false },
    });
    captions = (stream as unknown as { captions: StreamCaption[] }).captions;
    ({ browser, page } = await openPlayer(pages));
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    await Promise.all([pages?.close(), files?.close()]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('the result lists the input track, then the file, each a WebVTT file and its playlist', () => {
    const base = `${files.url}/film/captions/`;
    expect(captions).to.deep.equal(
      TRACKS.map((t, k) => ({
        language: t.language,
        label: t.label,
        url: `${base}caption_${k}.vtt`,
        playlistUrl: `${base}caption_${k}.m3u8`,
      })),
    );
  });

  it('the WebVTT files and playlists are served with their content types', async () => {
    for (const c of captions) {
      const track = await fetch(c.url);
      expect(track.headers.get('content-type')).to.equal('text/vtt');
      expect(await track.text()).to.match(/^WEBVTT/);
      const playlist = await fetch(c.playlistUrl ?? '');
      expect(playlist.headers.get('content-type')).to.equal('application/vnd.apple.mpegurl');
    }
  });

  it('hls.js lists both tracks and shows each cue at its time in the trimmed stream', async () => {
    const got = await captionsIn(page, 'hlsCaptions', `${files.url}/film/master.m3u8`, TRACKS);
    expectHlsCaptions(got, TRACKS);
  });

  it('dash.js lists both tracks and shows each cue at its time in the trimmed stream', async () => {
    const got = await captionsIn(page, 'dashCaptions', `${files.url}/film/manifest.mpd`, TRACKS);
    expectDashCaptions(got, TRACKS);
  });
});
