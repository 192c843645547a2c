// Issue 30's captions on transcodes through the handler with real ffmpeg, checked with ffprobe:
// the input's text subtitle streams kept with their languages, caller files attached, a broken
// file refused by name, one track burned into the picture (above a bottom watermark), the cues
// moved with a trim.
import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  JobRequested,
  JobResult,
  TranscodeSpec,
} from '../../services/core/contracts/types.generated.ts';
import { MediaError } from '../../services/core/errors.ts';
import { createTranscodeHandler } from '../../services/transcoder/handle-transcode.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { transcodeRequested } from '../support/job-requests.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { testJobContext } from '../support/job-context.ts';
import {
  SRT,
  VTT,
  changedRows,
  cuesOf,
  lumaAt,
  probedWvttStreams,
  subtitleStreams,
  writeCaptionInputs,
} from '../support/caption-media.ts';
import { mp4WebVttTracks } from '../support/mp4-webvtt.ts';

const H264_MP4 = { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' } as const;
const VP9_WEBM = { encoder: 'vp9', container: 'webm', bitrateKbps: '1000' } as const;
const VP8_MP4 = { encoder: 'vp8', container: 'mp4', bitrateKbps: '1000' } as const;
const TEXT_WATERMARK = { text: 'WM', fontSize: 24, position: 'bottomRight' } as const;

const handler = createTranscodeHandler(testMediaJobDeps());
const ctx = testJobContext('transcode');
let served: TestServer | undefined;

/** The file server of the running suite (started in its `before`). */
function files(): TestServer {
  if (!served) throw new Error('the file server is not started');
  return served;
}

function job(input: string, output: string, spec: TranscodeSpec): JobRequested {
  return transcodeRequested(files(), input, output, {
    jobId: '00000000-0000-4000-8000-000000000033',
    transcode: { ...spec, quality: { report: false } },
  });
}

const transcode = (input: string, output: string, spec: TranscodeSpec): Promise<JobResult> =>
  handler(job(input, output, spec), ctx);
const fileUrl = (name: string): string => `${files().url}/files/${name}`;
const servedPath = (name: string): string => join(files().dir, name);

/** The job's failure, which must be a MediaError. */
async function failure(input: string, output: string, spec: TranscodeSpec): Promise<MediaError> {
  const error = await transcode(input, output, spec).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).to.be.instanceOf(MediaError);
  return error as MediaError;
}

async function startFiles(): Promise<void> {
  served = await startTestServer();
  await writeCaptionInputs(served.dir);
  await writeFile(join(served.dir, 'good.srt'), `\uFEFF${SRT}`);
  await writeFile(join(served.dir, 'good.vtt'), VTT);
  await writeFile(join(served.dir, 'broken.srt'), '1\n00:00:01 --> 00:00:02,000\nHello\n');
}

describe('captions on a transcode (services/core/media/captions.ts)', function () {
  this.timeout(240_000);
  before(startFiles);
  after(() => files().close());
  describe('the input’s text subtitle streams', inputTrackCases);
  describe('caption files', captionFileCases);
  describe('burn-in of a caption file', burnInCases);
  describe('burn-in of an input track', inputBurnInCases);
  it('moves the cues with a trim, cutting those across its edges', trimShiftsCues);
  describe('VP8 in MP4 (remuxed by mediabunny: WebVTT tracks)', vp8Mp4Cases);
});

function inputTrackCases(): void {
  it('an MP4’s mov_text track stays in the MP4 output, language and cues kept', async () => {
    const result = await transcode('with-subs.mp4', 'kept.mp4', H264_MP4);
    const out = servedPath('kept.mp4');
    expect(await subtitleStreams(out)).to.have.length(1);
    expect((await subtitleStreams(out))[0]).to.include({ codec: 'mov_text', language: 'eng' });
    expect(await cuesOf(out, 0)).to.deep.equal([
      [1, 2, 'Hello'],
      [3, 3.5, 'World'],
    ]);
    expect(result.captions).to.deep.equal({
      tracks: [{ source: 'input', index: 0, language: 'eng', label: 'eng', codec: 'mov_text' }],
    });
  });

  it('an MKV’s SubRip and ASS tracks become two mov_text tracks in MP4, in order', async () => {
    await transcode('with-subs.mkv', 'from-mkv.mp4', H264_MP4);
    const streams = await subtitleStreams(servedPath('from-mkv.mp4'));
    expect(streams.map((s) => [s.codec, s.language])).to.deep.equal([
      ['mov_text', 'fre'],
      ['mov_text', 'ger'],
    ]);
    expect(await cuesOf(servedPath('from-mkv.mp4'), 1)).to.have.length(2);
  });

  it('an MKV without a length (its timeline rebuilt first) keeps its tracks too', async () => {
    const result = await transcode('with-subs-unindexed.mkv', 'from-unindexed.mp4', H264_MP4);
    expect(result.input?.durationSeconds).to.be.closeTo(4, 0.1);
    const streams = await subtitleStreams(servedPath('from-unindexed.mp4'));
    expect(streams.map((s) => [s.codec, s.language])).to.deep.equal([
      ['mov_text', 'fre'],
      ['mov_text', 'ger'],
    ]);
    expect(await cuesOf(servedPath('from-unindexed.mp4'), 0)).to.deep.equal([
      [1, 2, 'Hello'],
      [3, 3.5, 'World'],
    ]);
  });

  it('a WebM’s WebVTT track stays WebVTT in the WebM output', async () => {
    const result = await transcode('with-subs.webm', 'kept.webm', VP9_WEBM);
    const streams = await subtitleStreams(servedPath('kept.webm'));
    expect(streams.map((s) => [s.codec, s.language])).to.deep.equal([['webvtt', 'spa']]);
    expect(await cuesOf(servedPath('kept.webm'), 0)).to.deep.equal([
      [1, 2, 'Hello'],
      [3, 3.5, 'World'],
    ]);
    expect(result.captions?.tracks[0]).to.include({ codec: 'webvtt', language: 'spa' });
  });

  it('an input without subtitle streams and no captions asked: no track, no report', async () => {
    const result = await transcode('flat.mp4', 'plain.mp4', H264_MP4);
    expect(await subtitleStreams(servedPath('plain.mp4'))).to.deep.equal([]);
    expect(result).to.not.have.property('captions');
  });
}

/** Two caption files by URL: SubRip in English, WebVTT in Brazilian Portuguese. */
const withUrls = (): NonNullable<TranscodeSpec['captions']> => ({
  files: [
    { url: fileUrl('good.srt'), language: 'en', label: 'English (SDH)' },
    { url: fileUrl('good.vtt'), language: 'pt-BR', label: 'Português' },
  ],
});

function captionFileCases(): void {
  it('are added after the input’s tracks, with language and label (MP4)', async () => {
    const result = await transcode('with-subs.mp4', 'attached.mp4', {
      ...H264_MP4,
      captions: withUrls(),
    });
    const streams = await subtitleStreams(servedPath('attached.mp4'));
    expect(streams.map((s) => [s.codec, s.language, s.label])).to.deep.equal([
      ['mov_text', 'eng', 'eng'],
      ['mov_text', 'eng', 'English (SDH)'],
      ['mov_text', 'por', 'Português'],
    ]);
    expect(await cuesOf(servedPath('attached.mp4'), 2)).to.deep.equal([
      [1, 2, 'Hello'],
      [3, 3.5, 'World'],
    ]);
    expect(result.captions?.tracks.map((t) => [t.source, t.index, t.label])).to.deep.equal([
      ['input', 0, 'eng'],
      ['file', 0, 'English (SDH)'],
      ['file', 1, 'Português'],
    ]);
  });

  it('replace the input’s tracks with keepInput false (WebM: titles)', async () => {
    await transcode('with-subs.webm', 'attached.webm', {
      ...VP9_WEBM,
      captions: { ...withUrls(), keepInput: false },
    });
    const streams = await subtitleStreams(servedPath('attached.webm'));
    expect(streams.map((s) => [s.codec, s.language, s.label])).to.deep.equal([
      ['webvtt', 'eng', 'English (SDH)'],
      ['webvtt', 'por', 'Português'],
    ]);
  });

  it('a malformed file fails the job with input_caption_invalid naming it, not its URL', async () => {
    const captions: TranscodeSpec['captions'] = {
      files: [{ url: fileUrl('broken.srt'), language: 'en', label: 'Broken' }],
    };
    const error = await failure('flat.mp4', 'never.mp4', { ...H264_MP4, captions });
    expect(error.code).to.equal('input_caption_invalid');
    expect(error.message).to.match(/^captions\.files\[0\] \("Broken"\) /);
    expect(error.message).to.include('00:00:01 -->');
    expect(error.message).to.not.include(files().url);
    expect(error.message).to.not.include(files().dir);
  });
}

function burnInCases(): void {
  const burn = (url: string): NonNullable<TranscodeSpec['captions']> => ({
    files: [{ url, language: 'en', label: 'English' }],
    burnIn: { file: 0 },
  });
  const frames = async (seconds: number) => {
    const luma = (name: string) => lumaAt(servedPath(name), seconds);
    return {
      plain: await luma('b-plain.mp4'),
      burned: await luma('b-burned.mp4'),
      marked: await luma('b-marked.mp4'),
      both: await luma('b-both.mp4'),
    };
  };

  before(async () => {
    const captions = burn(fileUrl('good.srt'));
    await transcode('flat.mp4', 'b-plain.mp4', H264_MP4);
    await transcode('flat.mp4', 'b-burned.mp4', { ...H264_MP4, captions });
    await transcode('flat.mp4', 'b-marked.mp4', { ...H264_MP4, watermark: TEXT_WATERMARK });
    const both = { ...H264_MP4, captions, watermark: TEXT_WATERMARK };
    await transcode('flat.mp4', 'b-both.mp4', both);
  });

  it('draws the cue in the bottom part of the frame at its time, nowhere else', async () => {
    const at = await frames(1.5);
    const caption = changedRows(at.plain, at.burned, 320);
    expect(caption, 'rows changed by the caption').to.not.equal(undefined);
    expect(caption?.first).to.be.at.least(160);
    expect(caption?.last).to.be.below(240);
    const between = await frames(2.5);
    expect(changedRows(between.plain, between.burned, 320), 'no cue at 2.5 s').to.equal(undefined);
  });

  it('keeps the burned track as a soft track too', async () => {
    const streams = await subtitleStreams(servedPath('b-burned.mp4'));
    expect(streams.map((s) => s.label)).to.deep.equal(['English']);
  });

  it('moves the caption above a watermark in a bottom corner', async () => {
    const at = await frames(1.5);
    const watermark = changedRows(at.plain, at.marked, 320);
    const low = changedRows(at.plain, at.burned, 320);
    const raised = changedRows(at.marked, at.both, 320);
    const says = JSON.stringify({ watermark, low, raised });
    expect(watermark && low && raised, says).to.not.equal(undefined);
    expect(low?.last, `without a watermark it overlaps its rows ${says}`).to.be.at.least(
      watermark?.first ?? 0,
    );
    expect(raised?.last, `above the watermark ${says}`).to.be.below(watermark?.first ?? 0);
  });
}

function inputBurnInCases(): void {
  it('draws an input track that is not kept: no soft track, the picture changed', async () => {
    const captions = { keepInput: false, burnIn: { inputTrack: 1 } };
    const result = await transcode('with-subs.mkv', 'i-burned.mp4', { ...H264_MP4, captions });
    await transcode('with-subs.mkv', 'i-plain.mp4', {
      ...H264_MP4,
      captions: { keepInput: false },
    });
    expect(await subtitleStreams(servedPath('i-burned.mp4'))).to.deep.equal([]);
    expect(result.captions).to.deep.equal({
      tracks: [],
      burnedIn: { source: 'input', index: 1, language: 'ger', label: 'ger' },
    });
    const plain = await lumaAt(servedPath('i-plain.mp4'), 1.5);
    const burned = await lumaAt(servedPath('i-burned.mp4'), 1.5);
    const rows = changedRows(plain, burned, 320);
    expect(rows?.first, JSON.stringify(rows)).to.be.at.least(90);
  });

  it('fails with input_caption_invalid when the input has no such track', async () => {
    const captions = { burnIn: { inputTrack: 2 } };
    const error = await failure('with-subs.mkv', 'never.mp4', { ...H264_MP4, captions });
    expect(error.code).to.equal('input_caption_invalid');
    expect(error.message).to.equal(
      'captions.burnIn names track 2 of the text subtitle streams of the input, which has no such track',
    );
  });
}

async function trimShiftsCues(): Promise<void> {
  const trim = { startSeconds: 0.5, endSeconds: 3.3 };
  const result = await transcode('with-subs.mp4', 'trimmed.mp4', { ...H264_MP4, trim });
  expect(await cuesOf(servedPath('trimmed.mp4'), 0)).to.deep.equal([
    [0.5, 1.5, 'Hello'],
    [2.5, 2.8, 'World'],
  ]);
  expect(result.durationSeconds).to.be.closeTo(2.8, 0.05);
}

function vp8Mp4Cases(): void {
  const HELLO_WORLD: [number, number, string][] = [
    [1, 2, 'Hello'],
    [3, 3.5, 'World'],
  ];

  it('an MP4’s mov_text track is kept as a WebVTT track, language and cues kept', async () => {
    const result = await transcode('with-subs.mp4', 'vp8-kept.mp4', VP8_MP4);
    const out = servedPath('vp8-kept.mp4');
    expect(await probedWvttStreams(out)).to.deep.equal([
      { type: 'data', tag: 'wvtt', language: 'eng', handler: 'MediabunnyTextHandler' },
    ]);
    expect(await mp4WebVttTracks(out)).to.deep.equal([
      { language: 'eng', name: 'eng', enabled: true, cues: HELLO_WORLD },
    ]);
    expect(result.captions).to.deep.equal({
      tracks: [{ source: 'input', index: 0, language: 'eng', label: 'eng', codec: 'webvtt' }],
    });
  });

  it('caption files by URL follow the input’s track, with language and label', async () => {
    const result = await transcode('with-subs.mp4', 'vp8-attached.mp4', {
      ...VP8_MP4,
      captions: withUrls(),
    });
    const out = servedPath('vp8-attached.mp4');
    expect((await probedWvttStreams(out)).map((s) => s.language)).to.deep.equal([
      'eng',
      'eng',
      'por',
    ]);
    const tracks = await mp4WebVttTracks(out);
    expect(tracks.map((t) => [t.language, t.name, t.enabled])).to.deep.equal([
      ['eng', 'eng', true],
      ['eng', 'English (SDH)', false],
      ['por', 'Português', false],
    ]);
    expect(tracks[1]?.cues).to.deep.equal(HELLO_WORLD);
    expect(tracks[2]?.cues).to.deep.equal(HELLO_WORLD);
    expect(
      result.captions?.tracks.map((t) => [t.source, t.language, t.label, t.codec]),
    ).to.deep.equal([
      ['input', 'eng', 'eng', 'webvtt'],
      ['file', 'eng', 'English (SDH)', 'webvtt'],
      ['file', 'por', 'Português', 'webvtt'],
    ]);
  });

  it('a burned-in file is drawn at its time and kept as a soft track', async () => {
    const captions: TranscodeSpec['captions'] = {
      files: [{ url: fileUrl('good.srt'), language: 'en', label: 'English' }],
      burnIn: { file: 0 },
    };
    await transcode('flat.mp4', 'vp8-plain.mp4', VP8_MP4);
    await transcode('flat.mp4', 'vp8-burned.mp4', { ...VP8_MP4, captions });
    const luma = (name: string, seconds: number) => lumaAt(servedPath(name), seconds);
    const at = changedRows(
      await luma('vp8-plain.mp4', 1.5),
      await luma('vp8-burned.mp4', 1.5),
      320,
    );
    expect(at?.first, JSON.stringify(at)).to.be.at.least(160);
    expect(at?.last, JSON.stringify(at)).to.be.below(240);
    const between = [await luma('vp8-plain.mp4', 2.5), await luma('vp8-burned.mp4', 2.5)] as const;
    expect(changedRows(...between, 320), 'no cue at 2.5 s').to.equal(undefined);
    const tracks = await mp4WebVttTracks(servedPath('vp8-burned.mp4'));
    expect(tracks.map((t) => [t.name, t.cues])).to.deep.equal([['English', HELLO_WORLD]]);
  });
}
