import { expect } from 'chai';
import {
  CaptionFormatError,
  parseCaptions,
  trimCues,
  writeWebVtt,
} from '../../../services/core/media/caption-cues.ts';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

// As subtitle editors write them (Subtitle Edit, Aegisub exports, YouTube's WebVTT).
const SRT = `1
00:00:01,000 --> 00:00:02,500
Hello there.

2
00:00:03,250 --> 00:00:05,000 X1:100 X2:600 Y1:20 Y2:60
<i>Two</i> lines,
with --> in them.
`;

const VTT = `WEBVTT Kind: captions
Language: en

NOTE written by hand,
two lines of note

STYLE
::cue { color: yellow }

intro
00:01.000 --> 00:02.500 line:0 align:start position:10%
Hello there.

01:00:03.250 --> 01:00:05.000
Later.
`;

function refusal(text: string | Uint8Array): string {
  try {
    parseCaptions(typeof text === 'string' ? bytes(text) : text);
  } catch (error) {
    expect(error).to.be.instanceOf(CaptionFormatError);
    return (error as Error).message;
  }
  throw new Error('parsed');
}

describe('caption cues', () => {
  describe('SubRip', () => {
    it('reads cues, their lines and comma milliseconds; drops coordinates', () => {
      const { format, cues } = parseCaptions(bytes(SRT));
      expect(format).to.equal('subrip');
      expect(cues).to.deep.equal([
        { startMs: 1000, endMs: 2500, lines: ['Hello there.'] },
        { startMs: 3250, endMs: 5000, lines: ['<i>Two</i> lines,', 'with --> in them.'] },
      ]);
    });

    it('reads a BOM, CRLF line ends, dot milliseconds and short fractions alike', () => {
      const crlf = `\uFEFF1\r\n00:00:01.000 --> 00:00:02.5\r\nHello there.\r\n\r\n\r\n`;
      expect(parseCaptions(bytes(crlf)).cues).to.deep.equal([
        { startMs: 1000, endMs: 2500, lines: ['Hello there.'] },
      ]);
    });

    it('accepts cues without their number and blank lines of spaces between cues', () => {
      const text = '00:00:01,000 --> 00:00:02,000\nA\n  \n00:00:02,000 --> 00:00:03,000\nB\n';
      expect(parseCaptions(bytes(text)).cues.map((c) => c.lines[0])).to.deep.equal(['A', 'B']);
    });
  });

  describe('WebVTT', () => {
    it('reads cues with identifiers and settings, hours optional; skips NOTE and STYLE', () => {
      const { format, cues } = parseCaptions(bytes(VTT));
      expect(format).to.equal('webvtt');
      expect(cues).to.deep.equal([
        {
          startMs: 1000,
          endMs: 2500,
          settings: 'line:0 align:start position:10%',
          lines: ['Hello there.'],
        },
        { startMs: 3_603_250, endMs: 3_605_000, lines: ['Later.'] },
      ]);
    });

    it('reads a BOM and CRLF', () => {
      const text = '\uFEFFWEBVTT\r\n\r\n00:00.500 --> 00:01.000\r\nHi\r\n';
      expect(parseCaptions(bytes(text)).cues).to.deep.equal([
        { startMs: 500, endMs: 1000, lines: ['Hi'] },
      ]);
    });
  });

  describe('refuses', () => {
    it('an empty file, one of blank lines, and a WebVTT header without cues', () => {
      expect(refusal('')).to.equal('is empty');
      expect(refusal('\uFEFF\r\n\r\n')).to.equal('is empty');
      expect(refusal('WEBVTT\n\nNOTE nothing else\n')).to.equal('holds no cues');
    });

    it('text that is not UTF-8 (Latin-1 subtitles)', () => {
      const latin1 = Uint8Array.from([...bytes('1\n00:00:01,000 --> 00:00:02,000\nCaf'), 0xe9]);
      expect(refusal(latin1)).to.equal('is not UTF-8 text');
    });

    it('broken timestamps, in either format', () => {
      expect(refusal('1\n00:00:01 --> 00:00:02,000\nA\n')).to.match(/timing line: "00:00:01 -->/);
      expect(refusal('1\n00:61:01,000 --> 00:62:02,000\nA\n')).to.match(/timing line/);
      expect(refusal('WEBVTT\n\n00:01,000 --> 00:02.000\nA\n')).to.match(/timing line/);
      expect(refusal('WEBVTT\n\n00:01.000 -> 00:02.000\nA\n')).to.match(/timing line/);
      expect(refusal('WEBVTT\n\n00:00:01.00 --> 00:00:02.000\nA\n')).to.match(/timing line/);
    });

    it('a cue that ends before it starts', () => {
      expect(refusal('1\n00:00:05,000 --> 00:00:02,000\nA\n')).to.match(/ends before it starts/);
    });

    it('files of other formats (ASS, TTML, a picture)', () => {
      expect(refusal('[Script Info]\nTitle: x\n')).to.match(/neither WebVTT nor SubRip/);
      expect(refusal('<?xml version="1.0"?><tt xmlns="http://www.w3.org/ns/ttml"/>')).to.match(
        /neither WebVTT nor SubRip/,
      );
      const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      expect(refusal(png)).to.equal('is not UTF-8 text');
    });
  });

  describe('trimCues', () => {
    const cues = parseCaptions(bytes(SRT)).cues;

    it('keeps the cues of the part, on its timeline, cut at its edges', () => {
      expect(trimCues(cues, { startMs: 2000, durationMs: 2000 })).to.deep.equal([
        { startMs: 0, endMs: 500, lines: ['Hello there.'] },
        { startMs: 1250, endMs: 2000, lines: ['<i>Two</i> lines,', 'with --> in them.'] },
      ]);
    });

    it('drops cues wholly outside the part (touching its edge counts as outside)', () => {
      expect(trimCues(cues, { startMs: 2500, durationMs: 750 })).to.deep.equal([]);
    });
  });

  it('writes WebVTT that it reads back as the same cues', () => {
    const cues = parseCaptions(bytes(VTT)).cues.concat(parseCaptions(bytes(SRT)).cues);
    const text = writeWebVtt(cues);
    expect(text).to.match(/^WEBVTT\n\n00:00:01\.000 --> 00:00:02\.500 line:0/);
    expect(text).to.include('with --&gt; in them.');
    const back = parseCaptions(bytes(text)).cues;
    expect(back.map((c) => [c.startMs, c.endMs, c.settings])).to.deep.equal(
      cues.map((c) => [c.startMs, c.endMs, c.settings]),
    );
  });
});
