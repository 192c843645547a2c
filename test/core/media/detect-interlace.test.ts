import { expect } from 'chai';
import { idetVerdict } from '../../../services/core/media/detect-interlace.ts';

const frames = (kind: string, n: number): string =>
  Array.from(
    { length: n },
    (_, i) => `frame:${i}\nlavfi.idet.multiple.current_frame=${kind}\n`,
  ).join('');

describe('idet verdict', () => {
  it('interlaced when most frames with a verdict are, with the field order most of them show', () => {
    expect(
      idetVerdict(frames('undetermined', 5) + frames('tff', 40) + frames('progressive', 3)),
    ).to.equal('tff');
    expect(idetVerdict(frames('bff', 30) + frames('tff', 4))).to.equal('bff');
  });

  it('progressive when most frames are, or too few frames say anything', () => {
    expect(idetVerdict(frames('progressive', 100) + frames('tff', 20))).to.equal(undefined);
    expect(idetVerdict(frames('undetermined', 100) + frames('tff', 5))).to.equal(undefined);
    expect(idetVerdict('')).to.equal(undefined);
  });
});
