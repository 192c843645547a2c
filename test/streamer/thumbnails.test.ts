import { expect } from 'chai';
import { planThumbnails, thumbnailTrack } from '../../services/streamer/thumbnails.ts';

describe('thumbnail track', () => {
  it('maps every interval to its tile, across sheets of 10 x 10, the last cue ending with the input', () => {
    const plan = planThumbnails({}, { width: 1080, height: 1920 }, 603.5, {
      width: 1080,
      height: 1920,
    });
    expect(plan).to.include({ intervalSeconds: 5, tileWidth: 160, tileHeight: 284, count: 121 });
    expect(plan).to.include({ sheets: 2, posterSeconds: 603.5 / 4 });
    const cues = thumbnailTrack(plan, 603.5).trim().split('\n\n');
    expect(cues[0]).to.equal('WEBVTT');
    expect(cues[12]).to.equal('00:00:55.000 --> 00:01:00.000\nsprite_001.jpg#xywh=160,284,160,284');
    expect(cues[101]).to.equal('00:08:20.000 --> 00:08:25.000\nsprite_002.jpg#xywh=0,0,160,284');
    expect(cues.at(-1)).to.equal(
      '00:10:00.000 --> 00:10:03.500\nsprite_002.jpg#xywh=0,568,160,284',
    );
  });
});
