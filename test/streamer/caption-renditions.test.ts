import { expect } from 'chai';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  subtitlePlaylist,
  writeCaptionRenditions,
  type CaptionRendition,
} from '../../services/streamer/caption-renditions.ts';
import type { MeasuredRendition } from '../../services/streamer/measure-renditions.ts';
import { dashManifest, hlsMaster } from '../../services/streamer/write-manifests.ts';

function rendition(name: string, type: 'video' | 'audio', height = 0): MeasuredRendition {
  return {
    name,
    type,
    ...(type === 'video' ? { width: (height * 16) / 9, height } : {}),
    codecs: type === 'video' ? 'avc1.64001F' : 'mp4a.40.2',
    timescale: type === 'video' ? 12800 : 48000,
    init: 'init.mp4',
    initBytes: 800,
    segments: [
      { uri: 'seg_00000.m4s', durationSeconds: 2, bytes: 1000, decodeTime: 0 },
      {
        uri: 'seg_00001.m4s',
        durationSeconds: 2,
        bytes: 1000,
        decodeTime: type === 'video' ? 25600 : 96000,
      },
    ],
    targetDurationSeconds: 2,
    peakBitsPerSecond: type === 'video' ? 2_000_000 : 128_000,
    averageBitsPerSecond: type === 'video' ? 1_800_000 : 128_000,
    totalBytes: 2000,
  };
}

const renditions = [
  rendition('720p', 'video', 720),
  rendition('480p', 'video', 480),
  rendition('audio', 'audio'),
];
const captions: CaptionRendition[] = [
  {
    language: 'en',
    label: 'English',
    track: 'captions/caption_0.vtt',
    playlist: 'captions/caption_0.m3u8',
  },
  {
    language: 'pt-BR',
    label: 'Português "BR" & <co>',
    track: 'captions/caption_1.vtt',
    playlist: 'captions/caption_1.m3u8',
  },
];
const options = { renditions, frameRate: 25, audio: { channels: 2, sampleRate: 48000 } };

describe('caption renditions in the manifests', () => {
  it('HLS: a SUBTITLES group of one entry per track, named by every variant', () => {
    const lines = hlsMaster({ ...options, captions }).split('\n');
    expect(lines.filter((l) => l.startsWith('#EXT-X-MEDIA:TYPE=SUBTITLES'))).to.deep.equal([
      '#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en",DEFAULT=NO,AUTOSELECT=YES,URI="captions/caption_0.m3u8"',
      `#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="Português 'BR' & <co>",LANGUAGE="pt-BR",DEFAULT=NO,AUTOSELECT=YES,URI="captions/caption_1.m3u8"`,
    ]);
    const variants = lines.filter((l) => l.startsWith('#EXT-X-STREAM-INF:'));
    expect(variants).to.have.length(2);
    for (const v of variants) expect(v).to.match(/,AUDIO="audio",SUBTITLES="subs"$/);
  });

  it('HLS and DASH without captions are as before: no group, no text set', () => {
    for (const c of [undefined, []]) {
      const o = c ? { ...options, captions: c } : options;
      expect(hlsMaster(o)).not.to.match(/SUBTITLES/);
      expect(dashManifest(o)).not.to.match(/contentType="text"/);
    }
    // With captions, the master is the same but for the group and the variants' attribute.
    const withCaptions = hlsMaster({ ...options, captions })
      .split('\n')
      .filter((l) => !l.startsWith('#EXT-X-MEDIA:TYPE=SUBTITLES'))
      .map((l) => l.replace(',SUBTITLES="subs"', ''))
      .join('\n');
    expect(withCaptions).to.equal(hlsMaster(options));
  });

  it('DASH: a text adaptation set per track, its language, role, label and the file', () => {
    const mpd = dashManifest({ ...options, captions });
    const sets = mpd.match(/<AdaptationSet id="\d+" contentType="text"[\s\S]*?<\/AdaptationSet>/g);
    expect(sets).to.deep.equal([
      [
        '<AdaptationSet id="2" contentType="text" mimeType="text/vtt" lang="en">',
        '      <Label>English</Label>',
        '      <Role schemeIdUri="urn:mpeg:dash:role:2011" value="subtitle"/>',
        '      <Representation id="caption_0" bandwidth="256">',
        '        <BaseURL>captions/caption_0.vtt</BaseURL>',
        '      </Representation>',
        '    </AdaptationSet>',
      ].join('\n'),
      [
        '<AdaptationSet id="3" contentType="text" mimeType="text/vtt" lang="pt-BR">',
        '      <Label>Português &quot;BR&quot; &amp; &lt;co&gt;</Label>',
        '      <Role schemeIdUri="urn:mpeg:dash:role:2011" value="subtitle"/>',
        '      <Representation id="caption_1" bandwidth="256">',
        '        <BaseURL>captions/caption_1.vtt</BaseURL>',
        '      </Representation>',
        '    </AdaptationSet>',
      ].join('\n'),
    ]);
    // The text sets come after the video and the audio, inside the one period.
    expect(mpd.indexOf('contentType="text"')).to.be.greaterThan(mpd.indexOf('contentType="audio"'));
    expect(mpd.lastIndexOf('</AdaptationSet>')).to.be.lessThan(mpd.indexOf('</Period>'));
  });

  it('the subtitle media playlist: one segment of the stream, its target duration rounded up', () => {
    expect(subtitlePlaylist('captions/caption_0.vtt', 12.04)).to.equal(
      [
        '#EXTM3U',
        '#EXT-X-VERSION:7',
        '#EXT-X-TARGETDURATION:13',
        '#EXT-X-MEDIA-SEQUENCE:0',
        '#EXT-X-PLAYLIST-TYPE:VOD',
        '#EXTINF:12.040,',
        'caption_0.vtt',
        '#EXT-X-ENDLIST',
        '',
      ].join('\n'),
    );
  });
});

describe('writeCaptionRenditions', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'captions-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('copies each track under captions/ in order, with a playlist when HLS is published; languages in BCP 47', async () => {
    const vtt = (text: string) => `WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n${text}\n`;
    await writeFile(join(dir, 'a.vtt'), vtt('one'));
    await writeFile(join(dir, 'b.vtt'), vtt('two'));
    const tracks = [
      { path: join(dir, 'a.vtt'), language: 'en', label: 'English' },
      { path: join(dir, 'b.vtt'), language: 'fre', label: 'Français' },
      { path: join(dir, 'b.vtt'), language: 'pt-BR', label: 'Português' },
    ];
    const out = join(dir, 'out');
    const written = await writeCaptionRenditions(out, tracks, { durationSeconds: 12, hls: true });
    expect(written).to.deep.equal([
      {
        language: 'en',
        label: 'English',
        track: 'captions/caption_0.vtt',
        playlist: 'captions/caption_0.m3u8',
      },
      {
        language: 'fr',
        label: 'Français',
        track: 'captions/caption_1.vtt',
        playlist: 'captions/caption_1.m3u8',
      },
      {
        language: 'pt-BR',
        label: 'Português',
        track: 'captions/caption_2.vtt',
        playlist: 'captions/caption_2.m3u8',
      },
    ]);
    expect(await readFile(join(out, 'captions/caption_1.vtt'), 'utf8')).to.equal(vtt('two'));
    expect(await readFile(join(out, 'captions/caption_0.m3u8'), 'utf8')).to.equal(
      subtitlePlaylist('captions/caption_0.vtt', 12),
    );
    const dashOnly = await writeCaptionRenditions(join(dir, 'dash'), tracks, {
      durationSeconds: 12,
      hls: false,
    });
    expect(dashOnly.map((c) => c.playlist)).to.deep.equal([undefined, undefined, undefined]);
    expect(
      await writeCaptionRenditions(join(dir, 'none'), [], { durationSeconds: 12, hls: true }),
    ).to.deep.equal([]);
  });
});
