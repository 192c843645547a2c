import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { readMediaInfo, type ProbeJson } from '../../../services/core/media/media-info.ts';
import { uploadCases } from '../../support/upload-corpus.ts';

// ffprobe's JSON (`-show_format -show_streams`) of every file of the real-upload corpus
// (test/support/upload-corpus.ts), captured once with ffprobe 5.1.
const fixture = (name: string): ProbeJson =>
  JSON.parse(
    readFileSync(new URL(`fixtures/ffprobe/${name}.json`, import.meta.url), 'utf8'),
  ) as ProbeJson;

/** Files whose headers do not tell their true length: a scan or a remux measures them. */
const LENGTH_NOT_DECLARED = new Set([
  'browser-vp8-opus',
  'browser-vp9-opus',
  'browser-vp9-screen-share',
]);
const LENGTH_DECLARED_WRONG = new Set(['saved-stream-cat-ts', 'saved-stream-ts-jump']);

describe('the input model, read from captured ffprobe output', () => {
  for (const c of uploadCases('').filter((c) => c.kind !== 'broken')) {
    it(`${c.name}: displayed size, rotation, dynamic range, audio channels, length`, () => {
      const info = readMediaInfo(fixture(c.name));
      const video = info.video;
      expect(video, 'video').to.not.equal(undefined);
      expect(video?.display).to.deep.equal({
        width: c.expect.displayWidth,
        height: c.expect.displayHeight,
      });
      expect(video?.rotation).to.equal(c.expect.rotation);
      expect(video?.dynamicRange).to.equal(c.expect.dynamicRange);
      expect(info.audio?.channels ?? 0).to.equal(c.expect.audioChannels);
      if (LENGTH_NOT_DECLARED.has(c.name)) expect(info.durationSource).to.equal('none');
      else if (!LENGTH_DECLARED_WRONG.has(c.name))
        expect(info.durationSeconds).to.be.closeTo(c.expect.durationSeconds, 0.15);
      // Interlacing the stream declares; an unflagged one is found by idet (detect-interlace.ts).
      if (c.expect.interlaced && c.name !== 'broadcast-unflagged-xvid')
        expect(video?.fieldOrder).to.be.oneOf(['tff', 'bff']);
      if (!c.expect.interlaced) expect(video?.fieldOrder).to.not.be.oneOf(['tff', 'bff']);
    });
  }

  it('a packet scan gives a length to a file that declares none', () => {
    const info = readMediaInfo(fixture('browser-vp8-opus'), { durationSeconds: 2.01 });
    expect(info).to.include({ durationSeconds: 2.01, durationSource: 'packets' });
  });

  it('cover art is passed over for the main video stream', () => {
    const json = fixture('container-mp4-cover-art');
    const info = readMediaInfo(json);
    const art = json.streams?.find((s) => s.disposition?.attached_pic === 1);
    expect(art, 'the fixture has cover art').to.not.equal(undefined);
    expect(info.video?.index).to.not.equal(art?.index);
  });

  it('a full-range camera file is known as full range; HDR colour tags are read', () => {
    expect(readMediaInfo(fixture('camera-full-range-h264')).video?.colour.range).to.equal('pc');
    expect(readMediaInfo(fixture('hdr10-pq-hevc')).video).to.deep.include({
      bitDepth: 10,
      colour: { primaries: 'bt2020', transfer: 'smpte2084', matrix: 'bt2020nc', range: 'tv' },
    });
  });

  it('5.1(side) audio, two audio tracks (the first is the one outputs carry), late audio', () => {
    expect(readMediaInfo(fixture('audio-ac3-51side')).audio).to.include({
      channels: 6,
      layout: '5.1(side)',
    });
    const two = readMediaInfo(fixture('audio-two-tracks'));
    expect(two.audioStreams).to.have.length(2);
    expect(two.audio).to.equal(two.audioStreams[0]);
    expect(readMediaInfo(fixture('audio-late-1s')).audio?.startSeconds).to.be.closeTo(1, 0.1);
  });

  it('a saved stream that starts 10 hours in keeps its start; the anamorphic ratio is read', () => {
    expect(readMediaInfo(fixture('saved-stream-10h-start')).startSeconds).to.be.above(36000);
    expect(readMediaInfo(fixture('camera-pal-4x3-anamorphic')).video).to.include({
      width: 720,
      height: 576,
    });
  });

  it('an MP4 WebVTT track, a data stream to ffprobe, is a subtitle stream of codec wvtt', () => {
    // ffprobe 5.1 on a VP8-in-MP4 output with one caption track (remux-to-mp4.ts), abridged.
    const info = readMediaInfo({
      format: { format_name: 'mov,mp4,m4a,3gp,3g2,mj2', duration: '4.0' },
      streams: [
        { index: 0, codec_type: 'video', codec_name: 'vp8', codec_tag_string: 'vp08' },
        {
          index: 1,
          codec_type: 'data',
          codec_name: 'unknown',
          codec_tag_string: 'wvtt',
          tags: { language: 'eng', handler_name: 'MediabunnyTextHandler' },
        },
        { index: 2, codec_type: 'data', codec_tag_string: 'tmcd' },
      ],
    });
    expect(info.subtitleStreams).to.deep.equal([{ index: 1, codec: 'wvtt', language: 'eng' }]);
  });
});
