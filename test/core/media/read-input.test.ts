import { expect } from 'chai';
import { MediaError } from '../../../services/core/errors.ts';
import { checkDecodedLength, timelineNeedsRemux } from '../../../services/core/media/read-input.ts';
import { mediaInfo } from '../../support/job-input.ts';

describe('reading a job input', () => {
  it('saved streams (TS, PS) and files that declare no length are remuxed; MP4 and MKV are not', () => {
    const mp4 = mediaInfo({ width: 640, height: 360 });
    expect(timelineNeedsRemux(mp4)).to.equal(false);
    expect(timelineNeedsRemux({ ...mp4, formatName: 'matroska,webm' })).to.equal(false);
    expect(timelineNeedsRemux({ ...mp4, formatName: 'mpegts' })).to.equal(true);
    expect(timelineNeedsRemux({ ...mp4, formatName: 'mpeg' })).to.equal(true);
    expect(
      timelineNeedsRemux({ ...mp4, formatName: 'matroska,webm', durationSource: 'packets' }),
    ).to.equal(true);
  });

  it('a decode well short of the header is a truncated input (input_corrupt), with both lengths said', () => {
    const info = mediaInfo({ width: 640, height: 360 }, { durationSeconds: 10 });
    expect(() => checkDecodedLength(info, 9.8)).to.not.throw();
    expect(() => checkDecodedLength(info, 0)).to.not.throw();
    try {
      checkDecodedLength(info, 6.04);
      expect.fail('no error');
    } catch (error) {
      expect(error).to.be.instanceOf(MediaError);
      expect((error as MediaError).code).to.equal('input_corrupt');
      expect((error as MediaError).message).to.contain('6 s of the 10 s');
    }
  });

  it('a length that was measured (not declared) is never held against the decode', () => {
    const info = { ...mediaInfo({ width: 640, height: 360 }), durationSource: 'packets' as const };
    expect(() => checkDecodedLength(info, 2)).to.not.throw();
  });
});
