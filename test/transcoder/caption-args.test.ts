import { expect } from 'chai';
import type { CaptionTrack } from '../../services/core/media/captions.ts';
import { fontFamily } from '../../services/core/media/font-family.ts';
import { iso639Part2 } from '../../services/core/media/language-codes.ts';
import {
  burnInFilter,
  burnInMarginPx,
  captionInputs,
  captionOutputArgs,
} from '../../services/transcoder/caption-args.ts';

const track = (over: Partial<CaptionTrack> = {}): CaptionTrack => ({
  path: '/work/job/captions-file-0.vtt',
  language: 'pt-BR',
  label: 'Português',
  source: 'file',
  index: 0,
  ...over,
});

describe('caption arguments of a transcode', () => {
  it('languages: BCP 47 to ISO 639-2, three letters kept, und for the unknown', () => {
    expect(['en', 'pt-BR', 'zh-Hant-TW', 'eng', 'yue', 'xx', ''].map(iso639Part2)).to.deep.equal([
      'eng',
      'por',
      'zho',
      'eng',
      'yue',
      'und',
      'und',
    ]);
  });

  it('maps each track after the other inputs, language and label per container', () => {
    const tracks = [track({ source: 'input', language: 'eng', label: 'eng' }), track()];
    expect(captionOutputArgs(tracks, 'mp4', 2)).to.deep.equal([
      ...['-map', '2:0', '-map', '3:0', '-c:s', 'mov_text'],
      ...['-metadata:s:s:0', 'language=eng', '-metadata:s:s:0', 'handler_name=eng'],
      ...['-metadata:s:s:1', 'language=por', '-metadata:s:s:1', 'handler_name=Português'],
    ]);
    expect(captionOutputArgs([track()], 'webm', 1)).to.include.members([
      'webvtt',
      'title=Português',
    ]);
    expect(captionOutputArgs([], 'mp4', 1)).to.deep.equal([]);
    expect(captionInputs([track()])).to.deep.equal([
      ...['-format_whitelist', 'webvtt', '-protocol_whitelist', 'file,pipe'],
      ...['-f', 'webvtt', '-i', '/work/job/captions-file-0.vtt'],
    ]);
  });

  it('places the burn-in above a watermark in a bottom corner, at the default margin otherwise', () => {
    const image = { imageUrl: 'https://x.example/l.png', width: 80, height: 40 } as const;
    expect(burnInMarginPx(undefined, 720)).to.equal(25);
    expect(burnInMarginPx({ ...image, position: 'topRight' }, 720)).to.equal(25);
    expect(burnInMarginPx({ ...image, position: 'bottomLeft' }, 720)).to.equal(16 + 40 + 8);
    expect(burnInMarginPx(image, 720), 'bottomRight by default').to.equal(64);
    expect(burnInMarginPx({ text: 'WM', fontSize: 24 }, 720)).to.equal(16 + 29 + 8);
  });

  it('draws with the subtitles filter in the service font, margin in libass script units', () => {
    const burnIn = { track: track(), fontsDir: '/fonts', fontName: 'DejaVu Sans', marginPx: 64 };
    expect(burnInFilter(burnIn, 720)).to.equal(
      "subtitles=filename=/work/job/captions-file-0.vtt:fontsdir=/fonts:force_style='FontName=DejaVu Sans,Alignment=2,MarginV=26'",
    );
    const odd = { ...burnIn, fontName: "Evil',Font" };
    expect(burnInFilter(odd, 720)).to.not.include('Evil');
  });

  it('reads the family name of the shipped font', async () => {
    const font = process.env['TEST_FONT_FILE'] ?? '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';
    expect(await fontFamily(font)).to.equal('DejaVu Sans');
  });
});
