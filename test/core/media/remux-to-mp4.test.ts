// The VP8-in-MP4 remux with caption tracks, with real ffmpeg (the Matroska input) and mediabunny,
// the output's WebVTT tracks read from its boxes (ffmpeg cannot read them) and its streams from
// ffprobe.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { remuxToMp4 } from '../../../services/core/media/remux-to-mp4.ts';
import { mp4WebVttTracks } from '../../support/mp4-webvtt.ts';

const run = promisify(execFile);
const FFMPEG = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
const FFPROBE = process.env['TEST_FFPROBE'] ?? 'ffprobe';

/** Cues as a caller may give them: out of order, one of no length in between. */
const UNORDERED =
  'WEBVTT\n\n00:00:02.000 --> 00:00:03.000\nSecond\n\n' +
  '00:00:00.500 --> 00:00:01.000 line:0\nFirst\ntwo lines\n\n' +
  '00:00:01.500 --> 00:00:01.500\nNo length\n';

describe('remux of a VP8 Matroska file into MP4 (services/core/media/remux-to-mp4.ts)', function () {
  this.timeout(60_000);
  let dir = '';
  const at = (name: string): string => join(dir, name);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-remux-'));
    await run(FFMPEG, [
      ...['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=160x90:rate=25:duration=3'],
      ...['-f', 'lavfi', '-i', 'sine=duration=3', '-c:v', 'libvpx', '-deadline', 'realtime'],
      ...['-c:a', 'aac', '-f', 'matroska', '-y', at('encoded.mkv')],
    ]);
    await writeFile(at('unordered.vtt'), UNORDERED);
    await writeFile(at('empty.vtt'), 'WEBVTT\n\n');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('writes each caption track as WebVTT after the video and audio: language, name, default', async () => {
    await remuxToMp4(at('encoded.mkv'), at('two.mp4'), [
      { path: at('unordered.vtt'), language: 'pt-BR', label: 'Português' },
      { path: at('empty.vtt'), language: 'und', label: 'und' },
    ]);
    const { stdout } = await run(FFPROBE, [
      ...['-v', 'error', '-show_entries', 'stream=codec_type,codec_tag_string'],
      ...['-of', 'csv=p=0', at('two.mp4')],
    ]);
    expect(stdout.trim().split('\n')).to.deep.equal([
      'video,vp08',
      'audio,mp4a',
      'data,wvtt',
      'data,wvtt',
    ]);
    const tracks = await mp4WebVttTracks(at('two.mp4'));
    expect(tracks.map((t) => [t.language, t.name, t.enabled])).to.deep.equal([
      ['por', 'Português', true],
      ['und', 'und', false],
    ]);
  });

  it('sorts the cues, drops those of no length, gives a track without cues one empty cue', async () => {
    await remuxToMp4(at('encoded.mkv'), at('cues.mp4'), [
      { path: at('unordered.vtt'), language: 'en', label: 'English' },
      { path: at('empty.vtt'), language: 'en', label: 'Silent' },
    ]);
    const [ordered, silent] = await mp4WebVttTracks(at('cues.mp4'));
    expect(ordered?.cues).to.deep.equal([
      [0.5, 1, 'First\ntwo lines'],
      [2, 3, 'Second'],
    ]);
    expect(silent?.cues).to.deep.equal([[0, 0.001, '']]);
  });
});
