import { expect } from 'chai';
import { MediaError } from '../../services/core/errors.ts';
import { defaultLadder, frameRateFactor, requestedLadder } from '../../services/streamer/ladder.ts';
import { readMediaInfo, type VideoInfo } from '../../services/core/media/media-info.ts';

/** The input model of a file as ffprobe describes it (stored size, rotation matrix, rate). */
function video(o: { width: number; height: number; rotation?: number; rate?: string }): VideoInfo {
  const info = readMediaInfo({
    format: { format_name: 'mov,mp4,m4a,3gp,3g2,mj2', duration: '10', size: '1000' },
    streams: [
      {
        index: 0,
        codec_type: 'video',
        codec_name: 'h264',
        width: o.width,
        height: o.height,
        pix_fmt: 'yuv420p',
        r_frame_rate: o.rate ?? '30/1',
        avg_frame_rate: o.rate ?? '30/1',
        duration: '10',
        ...(o.rotation === undefined
          ? {}
          : { side_data_list: [{ side_data_type: 'Display Matrix', rotation: o.rotation }] }),
      },
    ],
  });
  if (!info.video) throw new Error('no video');
  return info.video;
}

const shape = (v: VideoInfo) =>
  defaultLadder(v).map((r) => `${r.width}x${r.height}@${r.bitrateKbps}`);

describe('ladder', () => {
  it('1080p30: five rungs from 1080 down, the table as it is', () => {
    expect(shape(video({ width: 1920, height: 1080 }))).to.deep.equal([
      '1920x1080@5000',
      '1280x720@2800',
      '852x480@1400',
      '640x360@800',
      '426x240@400',
    ]);
  });

  it('720p60: never above the input; bitrates scaled by 1.5 for 60 frames/s', () => {
    expect(frameRateFactor(60)).to.equal(1.5);
    expect(frameRateFactor(25)).to.equal(1);
    expect(shape(video({ width: 1280, height: 720, rate: '60/1' }))).to.deep.equal([
      '1280x720@4200',
      '852x480@2100',
      '640x360@1200',
      '426x240@600',
    ]);
  });

  it('a portrait phone video (stored 1920x1080, turned 90°) gets portrait rungs', () => {
    // ffprobe gives the matrix's angle counter-clockwise: -90 is a 90° clockwise turn.
    const v = video({ width: 1920, height: 1080, rotation: -90 });
    expect(v.display).to.deep.equal({ width: 1080, height: 1920 });
    const ladder = defaultLadder(v);
    expect(ladder.map((r) => `${r.width}x${r.height}`)).to.deep.equal([
      '1080x1920',
      '720x1280',
      '480x852',
      '360x640',
      '240x426',
    ]);
    expect(ladder.map((r) => r.name)).to.deep.equal(['1080p', '720p', '480p', '360p', '240p']);
  });

  it('320x240: one rung at the input size, its rate scaled to the 4:3 area', () => {
    expect(shape(video({ width: 320, height: 240 }))).to.deep.equal(['320x240@300']);
  });

  it('a size between the table entries gets its own top rung', () => {
    expect(shape(video({ width: 1280, height: 544 }))[0]).to.match(/^1280x544@/);
  });

  it('VBV: the peak is 1.2 times the average, the buffer one second of peak', () => {
    const [top] = defaultLadder(video({ width: 1920, height: 1080 }));
    expect(top).to.include({ maxrateKbps: 6000, bufsizeKbps: 6000 });
  });

  it('caller rungs: sorted, widths from the displayed aspect, refused when above the input', () => {
    const v = video({ width: 1280, height: 720 });
    const rungs = requestedLadder(v, [
      { height: 360, bitrateKbps: 600 },
      { height: 720, bitrateKbps: 2000 },
    ]);
    expect(rungs.map((r) => `${r.width}x${r.height}@${r.bitrateKbps}`)).to.deep.equal([
      '1280x720@2000',
      '640x360@600',
    ]);
    expect(() => requestedLadder(v, [{ height: 1080, bitrateKbps: 5000 }]))
      .to.throw(MediaError)
      .with.property('code', 'invalid_request');
    expect(() =>
      requestedLadder(v, [
        { height: 720, bitrateKbps: 500 },
        { height: 360, bitrateKbps: 600 },
      ]),
    ).to.throw(/more kb\/s/);
    expect(() =>
      requestedLadder(v, [
        { height: 360, bitrateKbps: 500 },
        { height: 360, bitrateKbps: 600 },
      ]),
    ).to.throw(/given twice/);
  });
});
