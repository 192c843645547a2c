import { expect } from 'chai';
import { MediaError } from '../../../services/core/errors.ts';
import type { MediaInfo } from '../../../services/core/media/probe-media.ts';
import { verifyOutput, type ExpectedOutput } from '../../../services/core/media/verify-output.ts';
import { audioInfo, mediaInfo, videoInfo } from '../../support/job-input.ts';

const expected: ExpectedOutput = {
  format: 'mp4',
  videoCodec: 'h264',
  width: 320,
  height: 180,
  durationSeconds: 10,
  toleranceSeconds: 0.5,
  audio: false,
};
const good: MediaInfo = mediaInfo(
  { width: 320, height: 180 },
  { audio: false, durationSeconds: 10.2 },
);

async function failure(info: MediaInfo | Error): Promise<MediaError> {
  const probe = (): Promise<MediaInfo> =>
    info instanceof Error ? Promise.reject(info) : Promise.resolve(info);
  const error = await verifyOutput(probe, '/tmp/work/secret/output.mp4', expected).catch(
    (e: unknown) => e,
  );
  expect(error).to.be.instanceOf(MediaError);
  return error as MediaError;
}

describe('output verification (shared by every worker)', () => {
  it('passes a file that is what was asked', async () => {
    const out = await verifyOutput(() => Promise.resolve(good), '/tmp/x.mp4', expected);
    expect(out.video.width).to.equal(320);
  });

  it('an output ffprobe cannot read is output_invalid, never input_unsupported, and names no path', async () => {
    const error = await failure(
      new MediaError('input_unsupported', 'the input is not a readable video'),
    );
    expect(error.code).to.equal('output_invalid');
    expect(error.message).to.not.contain('/tmp');
  });

  it('names each mismatch: container, codec, size, duration, an audio stream that should not be there', async () => {
    const error = await failure({
      ...good,
      formatName: 'matroska,webm',
      durationSeconds: 12,
      video: videoInfo({ width: 322, height: 180 }, { codec: 'vp9', codecTag: '' }),
      audio: audioInfo(),
    });
    expect(error.code).to.equal('output_invalid');
    expect(error.message)
      .to.contain('container')
      .and.contain('codec vp9')
      .and.contain('size 322x180')
      .and.contain('duration 12s')
      .and.contain('audio');
  });
});
