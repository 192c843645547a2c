import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CORPUS, SHORT_CORPUS, corpusClip } from '../support/quality-corpus.ts';

const run = promisify(execFile);

interface VideoStream {
  width: number;
  height: number;
  r_frame_rate: string;
  pix_fmt: string;
  nb_read_frames: string;
}

async function probeVideo(path: string): Promise<{ seconds: number; video: VideoStream }> {
  const { stdout } = await run(process.env['TEST_FFPROBE'] ?? 'ffprobe', [
    ...['-v', 'error', '-count_frames', '-select_streams', 'v:0', '-print_format', 'json'],
    ...['-show_entries', 'format=duration:stream=width,height,r_frame_rate,pix_fmt,nb_read_frames'],
    path,
  ]);
  const probed = JSON.parse(stdout) as { format: { duration: string }; streams: VideoStream[] };
  const video = probed.streams[0];
  if (!video) throw new Error(`${path}: no video stream`);
  return { seconds: Number(probed.format.duration), video };
}

/** Bytes of x264 at one fixed CRF: how hard the picture is to encode. */
async function x264Bytes(path: string, dir: string): Promise<number> {
  const out = join(dir, 'crf.mp4');
  await run(process.env['TEST_FFMPEG'] ?? 'ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-i', path, '-an', '-c:v', 'libx264'],
    ...['-preset', 'ultrafast', '-crf', '28', '-threads', '2', '-y', out],
  ]);
  return (await stat(out)).size;
}

describe('quality corpus (test/support/quality-corpus.ts)', function () {
  // A cold cache makes the short clips (about 30 s on two cores); a warm one only probes them.
  this.timeout(240_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-corpus-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('declares natural and synthetic clips of 3 s to a minute, and short ones of 5 s at most 640x360', () => {
    const kinds = (list: typeof CORPUS) => list.map((c) => c.kind);
    for (const list of [CORPUS, SHORT_CORPUS]) {
      expect(kinds(list).filter((k) => k === 'natural')).to.have.length.of.at.least(3);
      expect(kinds(list).filter((k) => k === 'synthetic')).to.have.length.of.at.least(3);
    }
    for (const c of CORPUS) expect(c.seconds, c.name).to.be.within(3, 60);
    for (const c of SHORT_CORPUS) {
      expect(c.seconds, c.name).to.equal(5);
      expect(c.width * c.height, c.name).to.be.at.most(640 * 360);
    }
    const names = [...CORPUS, ...SHORT_CORPUS].map((c) => c.name);
    expect(new Set(names).size).to.equal(names.length);
  });

  it('makes every short clip with its declared length, size and 25 fps, and finds it again in the cache', async () => {
    for (const entry of SHORT_CORPUS) {
      const clip = await corpusClip(entry.name);
      const { seconds, video } = await probeVideo(clip.path);
      expect(seconds, entry.name).to.be.closeTo(entry.seconds, 0.05);
      expect([video.width, video.height], entry.name).to.deep.equal([entry.width, entry.height]);
      expect(video.r_frame_rate, entry.name).to.equal('25/1');
      expect(video.pix_fmt, entry.name).to.equal('yuv420p');
      expect(Number(video.nb_read_frames), entry.name).to.equal(entry.seconds * 25);
      expect((await corpusClip(entry.name)).path).to.equal(clip.path);
    }
  });

  it('ships the natural sources as declared (animation, camera)', async () => {
    for (const name of ['animation', 'camera']) {
      const clip = await corpusClip(name);
      const { seconds, video } = await probeVideo(clip.path);
      expect(seconds, name).to.be.closeTo(clip.seconds, 0.1);
      expect([video.width, video.height], name).to.deep.equal([clip.width, clip.height]);
      expect(video.r_frame_rate, name).to.equal('25/1');
    }
  });

  it('is not trivially easy: at one CRF, fast motion costs x264 several times what held photographs do', async () => {
    const slides = await x264Bytes((await corpusClip('slides-short')).path, dir);
    const fast = await x264Bytes((await corpusClip('fast-motion-short')).path, dir);
    expect(fast / slides).to.be.greaterThan(3);
  });

  it('rejects a name it does not have', async () => {
    const error = await corpusClip('no-such-clip').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(error)).to.match(/no corpus clip named no-such-clip/);
  });
});
