import { expect } from 'chai';
import { buildTranscodeArgs, outputSize } from '../../services/transcoder/build-transcode-args.ts';
import { jobInputOf, mediaInfo } from '../support/job-input.ts';

describe('transcode arguments', () => {
  const input = { width: 1920, height: 1080 };
  it('sizes: both, one (aspect kept, even), none, odd values rounded down to even', () => {
    expect(outputSize({ width: 640, height: 360 }, input)).to.deep.equal({
      width: 640,
      height: 360,
    });
    expect(outputSize({ width: 641 }, input)).to.deep.equal({ width: 640, height: 360 });
    expect(outputSize({ height: 101 }, input)).to.deep.equal({ width: 178, height: 100 });
    expect(outputSize({}, { width: 1279, height: 719 })).to.deep.equal({
      width: 1278,
      height: 718,
    });
  });

  it('h265 in mp4 gets the hvc1 tag; webm gets opus; bitrate is passed in kbps', () => {
    const base = {
      input: jobInputOf('/tmp/in', mediaInfo({ width: 640, height: 360 })),
      outputPath: '/tmp/out',
      size: { width: 640, height: 360 },
      threads: 2,
    };
    const h265 = buildTranscodeArgs({
      ...base,
      spec: { encoder: 'h265', container: 'mp4', bitrateKbps: '2000' },
    });
    expect(h265.join(' '))
      .to.contain('-tag:v hvc1')
      .and.contain('-b:v 2000k')
      .and.contain('-c:a aac')
      .and.contain('+faststart');
    const vp9 = buildTranscodeArgs({
      ...base,
      spec: { encoder: 'vp9', container: 'webm', bitrateKbps: '4000' },
    });
    expect(vp9.join(' '))
      .to.contain('libvpx-vp9')
      .and.contain('-c:a libopus')
      .and.contain('-f webm');
    const silent = buildTranscodeArgs({
      ...base,
      input: jobInputOf('/tmp/in', mediaInfo({ width: 640, height: 360 }, { audio: false })),
      spec: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
    });
    expect(silent).to.include('-an');
    expect(silent.join(' '))
      .to.contain('format=yuv420p')
      .and.contain('-format_whitelist')
      .and.contain('-protocol_whitelist file,pipe');
  });
});
