import { expect } from 'chai';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVideoRateReader } from '../../../services/core/media/probe-media.ts';
import { deliveredKbps, videoPackets } from '../../support/encode-measures.ts';
import { generateClip } from '../../support/generate-clip.ts';

describe("video rate reader (the transcoder's rate check)", function () {
  this.timeout(60_000);
  let dir: string;
  const read = createVideoRateReader(process.env['TEST_FFPROBE'] ?? 'ffprobe', {
    memoryLimitBytes: 2 * 1024 ** 3,
  });
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-video-rate-'));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const format of ['mp4', 'matroska'] as const) {
    it(`${format}: the video packets' bits over the stream's length, audio not counted`, async () => {
      const path = join(dir, `clip.${format}`);
      await generateClip(path, {
        seconds: 3,
        width: 320,
        height: 240,
        audio: true,
        noise: true,
        format,
      });
      const { packets, seconds } = await videoPackets(path);
      const kbps = await read(path);
      expect(kbps).to.be.closeTo(deliveredKbps(packets, seconds), 0.001 * kbps);
      // The whole file's rate is higher: the audio and the container are not the video's.
      const whole = ((await stat(path)).size * 8) / 1000 / 3;
      expect(kbps).to.be.below(whole);
    });
  }

  it('rejects a file without video', async () => {
    const path = join(dir, 'missing.mp4');
    const error = await read(path).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(Error);
  });
});
