import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { defaultLadder, type Rung } from '../../services/streamer/ladder.ts';
import { readInput, type JobInput } from '../../services/core/media/read-input.ts';
import { buildLadderArgs } from '../../services/streamer/build-ladder-args.ts';
import { planThumbnails } from '../../services/streamer/thumbnails.ts';
import { writeLadder, type WrittenLadder } from '../../services/streamer/write-ladder.ts';
import { generateClip } from '../support/generate-clip.ts';
import { pictureStats } from '../support/media-checks.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';

const run = promisify(execFile);
const FFPROBE = process.env['TEST_FFPROBE'] ?? 'ffprobe';
const deps = testMediaJobDeps();
const SEGMENT = 2;

/** One rendition's init and media segments joined: what a player feeds its decoder. */
async function joined(dir: string, name: string, ladder: WrittenLadder): Promise<string> {
  const r = ladder.renditions.find((x) => x.name === name);
  if (!r) throw new Error(`no rendition ${name}`);
  const parts = [r.init, ...r.segments.map((s) => s.uri)];
  const bytes = await Promise.all(parts.map((p) => readFile(join(dir, name, p))));
  const path = join(dir, `${name}.joined.mp4`);
  await writeFile(path, Buffer.concat(bytes));
  return path;
}

interface Packet {
  pts_time: string;
  size: string;
  flags: string;
}

async function videoPackets(
  path: string,
): Promise<{ codec: string; w: number; h: number; packets: Packet[] }> {
  const { stdout } = await run(
    FFPROBE,
    [
      '-v',
      'error',
      '-select_streams',
      'v:0',
      '-show_streams',
      '-show_packets',
      '-of',
      'json',
      path,
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const json = JSON.parse(stdout) as {
    streams: { codec_name: string; width: number; height: number }[];
    packets: Packet[];
  };
  const [s] = json.streams;
  if (!s) throw new Error('no video stream');
  return { codec: s.codec_name, w: s.width, h: s.height, packets: json.packets };
}

const attr = (line: string, name: string): string | undefined =>
  new RegExp(`(?:^|,|:)${name}=("[^"]*"|[^,]*)`).exec(line)?.[1]?.replace(/"/g, '');

async function encode(
  dir: string,
  input: JobInput,
  rungs: Rung[],
  encoder: 'h264' | 'h265' | 'vp9' = 'h264',
): Promise<WrittenLadder> {
  const signal = new AbortController().signal;
  const top = rungs[0] ?? input.video.display;
  const thumbnails = planThumbnails(
    { intervalSeconds: 2 },
    input.video.display,
    input.info.durationSeconds,
    top,
  );
  return writeLadder((args) => deps.runFfmpeg(args, { signal, stallTimeoutMs: 30_000 }), {
    input,
    rungs,
    encoder,
    segmentSeconds: SEGMENT,
    outDir: join(dir, 'out'),
    passLogPrefix: join(dir, 'ladder-pass'),
    threads: 2,
    formats: ['hls', 'dash'],
    thumbnails,
  });
}

let dir: string;
let input: JobInput;
let rungs: Rung[];
let ladder: WrittenLadder;

describe('a ladder from one decode: CMAF segments, HLS master and DASH MPD', function () {
  this.timeout(120_000);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ladder-'));
    await generateClip(join(dir, 'in.mp4'), {
      seconds: 7,
      width: 852,
      height: 480,
      audio: true,
      noise: true,
    });
    input = await readInput(deps, new AbortController().signal, {
      inputPath: join(dir, 'in.mp4'),
      workDir: dir,
    });
    rungs = defaultLadder(input.video);
    ladder = await encode(dir, input, rungs);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  describesFfmpegReadingInputOnce();

  describesMasterDeclaresCODECSRESOLUTION();

  describesDecodeMakesPosterSprite();

  const others: ['h265' | 'vp9', string, RegExp, string][] = [
    ['h265', 'hevc', /^hvc1\.1\.6\.L\d+(\.[0-9A-F]{1,2})+$/, 'hvc1'],
    ['vp9', 'vp9', /^vp09\.00\.\d\d\.08$/, 'vp09'],
  ];
  for (const [encoder, codec, codecs, tag] of others)
    it(`${encoder}: every rung in CMAF as ${tag}, keyframes at the same boundaries, its codec string declared`, async () => {
      const sub = join(dir, encoder);
      const written = await encode(sub, input, rungs, encoder);
      const times: string[] = [];
      for (const rung of rungs) {
        const r = written.renditions.find((x) => x.name === rung.name);
        expect(r?.codecs).to.match(codecs);
        const path = await joined(join(sub, 'out'), rung.name, written);
        const probed = await videoPackets(path);
        expect([probed.codec, probed.w, probed.h]).to.deep.equal([codec, rung.width, rung.height]);
        const { stdout } = await run(FFPROBE, [
          ...['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=codec_tag_string'],
          ...['-of', 'csv=p=0', path],
        ]);
        expect(stdout.trim()).to.equal(tag);
        const keys = probed.packets
          .filter((p) => p.flags.startsWith('K'))
          .map((p) => Number(p.pts_time));
        times.push(keys.map((t) => (t - (keys[0] ?? 0)).toFixed(2)).join());
      }
      expect(new Set(times)).to.have.property('size', 1);
      expect(times[0]).to.equal('0.00,2.00,4.00,6.00');
      const master = await readFile(join(sub, 'out', 'master.m3u8'), 'utf8');
      expect(master).to.contain(`CODECS="${written.renditions[0]?.codecs},mp4a.40.2"`);
    });
});

function describesFfmpegReadingInputOnce(): void {
  it('is one ffmpeg reading the input once and splitting it to every rung', () => {
    const args = buildLadderArgs({
      input,
      rungs,
      encoder: 'h264',
      segmentSeconds: 2,
      outDir: '/o',
      passLogPrefix: '/w/ladder-pass',
      threads: 2,
    });
    expect(args.filter((a) => a === '-i')).to.have.length(1);
    expect(args.join(' ')).to.contain(`split=${rungs.length}`);
    expect(rungs.map((r) => r.name)).to.deep.equal(['480p', '360p', '240p']);
  });

  it('every rung: H.264 at its size, keyframes at the same segment boundaries in all rungs', async () => {
    const out = join(dir, 'out');
    const starts: string[][] = [];
    for (const rung of rungs) {
      const probed = await videoPackets(await joined(out, rung.name, ladder));
      expect(probed.codec).to.equal('h264');
      expect([probed.w, probed.h]).to.deep.equal([rung.width, rung.height]);
      const times = probed.packets
        .filter((p) => p.flags.startsWith('K'))
        .map((p) => Number(p.pts_time));
      // Presentation starts after the B-frame delay, the same in every rung.
      const keys = times.map((t) => (t - (times[0] ?? 0)).toFixed(2));
      starts.push(times.map((t) => t.toFixed(2)));
      // 7 s in 2 s segments: keyframes at 0, 2, 4, 6 and nowhere else.
      expect(keys).to.deep.equal(['0.00', '2.00', '4.00', '6.00']);
      const r = ladder.renditions.find((x) => x.name === rung.name);
      expect(r?.segments.map((s) => s.durationSeconds)).to.deep.equal([2, 2, 2, 1]);
    }
    expect(new Set(starts.map((s) => s.join()))).to.have.property('size', 1);
  });
}

function describesMasterDeclaresCODECSRESOLUTION(): void {
  it('the master declares CODECS, RESOLUTION, FRAME-RATE and measured bandwidths the rungs keep to', async () => {
    const out = join(dir, 'out');
    const master = await readFile(join(out, 'master.m3u8'), 'utf8');
    expect(master).to.match(/#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio".*URI="audio\/index\.m3u8"/);
    const audio = ladder.renditions.find((x) => x.type === 'audio');
    const lines = master.split('\n');
    for (const rung of rungs) {
      const k = lines.indexOf(`${rung.name}/index.m3u8`);
      const inf = lines[k - 1] ?? '';
      expect(attr(inf, 'RESOLUTION')).to.equal(`${rung.width}x${rung.height}`);
      expect(attr(inf, 'FRAME-RATE')).to.equal('25.000');
      expect(inf).to.match(/CODECS="avc1\.6400[0-9A-F]{2},mp4a\.40\.2"/);
      expect(attr(inf, 'AUDIO')).to.equal('audio');
      const bandwidth = Number(attr(inf, 'BANDWIDTH'));
      const average = Number(attr(inf, 'AVERAGE-BANDWIDTH'));
      expect(bandwidth).to.be.at.least(average);
      // What ffprobe reads of the rung: each segment's video bits per second stays under the
      // declared peak (less the audio group's), the whole under the declared average.
      const probed = await videoPackets(await joined(out, rung.name, ladder));
      const videoPeak = bandwidth - (audio?.peakBitsPerSecond ?? 0);
      const bySegment = [0, 0, 0, 0];
      for (const p of probed.packets) {
        const seg = Math.min(3, Math.floor(Number(p.pts_time) / SEGMENT + 1e-6));
        bySegment[seg] = (bySegment[seg] ?? 0) + Number(p.size);
      }
      const full = bySegment.slice(0, 3).map((b) => (b * 8) / SEGMENT);
      for (const rate of full) expect(rate).to.be.at.most(videoPeak);
      const total = (bySegment.reduce((a, b) => a + b, 0) * 8) / 7;
      expect(total).to.be.at.most(average - (audio?.averageBitsPerSecond ?? 0));
      // And near what the rung asked for: VBV keeps it under the peak rate, x264 near the target.
      expect(total / 1000).to.be.within(rung.bitrateKbps * 0.6, rung.maxrateKbps);
    }
  });

  it('the MPD references the same init and media segments, on a timeline of their lengths', async () => {
    const out = join(dir, 'out');
    const mpd = await readFile(join(out, 'manifest.mpd'), 'utf8');
    expect(mpd).to.contain('mediaPresentationDuration="PT7.');
    for (const r of ladder.renditions) {
      expect(mpd).to.contain(
        `initialization="${r.name}/${r.init}" media="${r.name}/seg_$Number%05d$.m4s"`,
      );
      expect(mpd).to.contain(
        `<Representation id="${r.name}" bandwidth="${r.peakBitsPerSecond}" codecs="${r.codecs}"`,
      );
      for (const s of r.segments) await stat(join(out, r.name, s.uri));
    }
    expect(mpd).to.match(/<Representation id="480p"[^>]*width="852" height="480"/);
    expect(mpd).to.contain('<AudioChannelConfiguration');
  });
}

function describesDecodeMakesPosterSprite(): void {
  it('the same decode makes a poster, a sprite sheet and a WebVTT track of its tiles', async () => {
    const out = join(dir, 'out');
    expect(ladder.thumbnails).to.deep.equal({
      poster: 'thumbnails/poster.jpg',
      track: 'thumbnails/thumbnails.vtt',
      sheets: ['thumbnails/sprite_001.jpg'],
    });
    const size = async (p: string) => {
      const { stdout } = await run(FFPROBE, [
        ...['-v', 'error', '-show_entries', 'stream=codec_name,width,height', '-of', 'csv=p=0'],
        join(out, p),
      ]);
      return stdout.trim();
    };
    expect(await size('thumbnails/poster.jpg')).to.equal('mjpeg,852,480');
    expect(await size('thumbnails/sprite_001.jpg')).to.equal('mjpeg,1600,900');
    const vtt = await readFile(join(out, 'thumbnails/thumbnails.vtt'), 'utf8');
    expect(vtt.trim().split('\n\n').slice(1)).to.deep.equal([
      '00:00:00.000 --> 00:00:02.000\nsprite_001.jpg#xywh=0,0,160,90',
      '00:00:02.000 --> 00:00:04.000\nsprite_001.jpg#xywh=160,0,160,90',
      '00:00:04.000 --> 00:00:06.000\nsprite_001.jpg#xywh=320,0,160,90',
      '00:00:06.000 --> 00:00:07.000\nsprite_001.jpg#xywh=480,0,160,90',
    ]);
  });

  it('the sheet holds as many tiles as the track names: the fourth shows the clip, the fifth is empty', async () => {
    const tile = async (x: number) => {
      const path = join(dir, `tile-${x}.png`);
      await run(process.env['TEST_FFMPEG'] ?? 'ffmpeg', [
        ...['-v', 'error', '-i', join(dir, 'out', 'thumbnails/sprite_001.jpg')],
        ...['-vf', `crop=160:90:${x}:0`, '-y', path],
      ]);
      return pictureStats(path);
    };
    expect((await tile(480)).luma).to.be.above(60);
    expect((await tile(640)).luma).to.be.below(20);
  });

  it('a portrait phone video (stored landscape, turned 90°) comes out upright at portrait rung sizes', async () => {
    const sub = join(dir, 'portrait');
    await generateClip(join(dir, 'wide.mp4'), { seconds: 3, width: 640, height: 360 });
    await run(process.env['TEST_FFMPEG'] ?? 'ffmpeg', [
      ...['-loglevel', 'error', '-i', join(dir, 'wide.mp4'), '-c', 'copy'],
      ...['-metadata:s:v', 'rotate=90', '-y', join(dir, 'phone.mp4')],
    ]);
    const phone = await readInput(deps, new AbortController().signal, {
      inputPath: join(dir, 'phone.mp4'),
      workDir: dir,
    });
    const portrait = defaultLadder(phone.video);
    expect(portrait.map((r) => `${r.width}x${r.height}`)).to.deep.equal(['360x640', '240x426']);
    const written = await encode(sub, phone, portrait);
    for (const rung of portrait) {
      const probed = await videoPackets(await joined(join(sub, 'out'), rung.name, written));
      expect([probed.w, probed.h]).to.deep.equal([rung.width, rung.height]);
    }
  });
}
