import { expect } from 'chai';
import { pictureFilters, colourFilters } from '../../../services/core/media/picture-filters.ts';
import { videoInfo } from '../../support/job-input.ts';

describe('picture filters (what every output shows)', () => {
  const size = { width: 640, height: 360 };

  it('a progressive SDR input is only scaled: square pixels, BT.709 limited range', () => {
    const chain = pictureFilters(
      { video: videoInfo({ width: 1280, height: 720 }) },
      size,
      'bicubic',
    );
    expect(chain).to.equal(
      'scale=640:360:flags=bicubic:in_color_matrix=bt709:out_color_matrix=bt709:in_range=tv:out_range=tv,' +
        'setparams=range=tv:color_primaries=bt709:color_trc=bt709:colorspace=bt709,setsar=1',
    );
  });

  it('an SD input that names no matrix is read as BT.601; a full-range one is made limited', () => {
    const video = videoInfo({ width: 720, height: 576 }, { colour: { range: 'pc' } });
    expect(pictureFilters({ video }, size, 'lanczos'))
      .to.contain('in_color_matrix=bt601')
      .and.contain('in_range=full:out_range=tv');
  });

  it('interlaced input is deinterlaced first, with its own field order, before a frame-rate drop', () => {
    const chain = pictureFilters(
      { video: videoInfo({ width: 720, height: 576 }), deinterlace: 'bff' },
      size,
      'lanczos',
      'fps=12',
    );
    expect(chain).to.match(
      /^format=yuv420p,bwdif=mode=send_frame:parity=bff:deint=all,fps=12,scale=/,
    );
  });

  it('PQ and HLG are tone-mapped to BT.709 before scaling; SDR has no colour step', () => {
    for (const [dynamicRange, transfer] of [
      ['pq', 'smpte2084'],
      ['hlg', 'arib-std-b67'],
    ] as const) {
      const video = videoInfo(
        { width: 3840, height: 2160 },
        {
          dynamicRange,
          bitDepth: 10,
          colour: { primaries: 'bt2020', transfer, matrix: 'bt2020nc' },
        },
      );
      const chain = pictureFilters({ video }, size, 'bicubic');
      expect(chain).to.match(new RegExp(`^zscale=tin=${transfer}:pin=2020:min=2020_ncl`));
      expect(chain)
        .to.contain('tonemap=tonemap=mobius')
        .and.contain('zscale=t=709,format=gbrp16le,zscale=m=709:r=limited');
      expect(chain.indexOf('tonemap')).to.be.below(chain.indexOf('scale=640'));
      expect(colourFilters({ video })).to.contain('tonemap');
    }
    expect(colourFilters({ video: videoInfo(size) })).to.equal(undefined);
  });
});
