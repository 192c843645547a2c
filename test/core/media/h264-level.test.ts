import { expect } from 'chai';
import { h264Level, type Vbv } from '../../../services/core/media/h264-level.ts';

/** The transcoder's VBV at `kbps`: a peak of 2× and a buffer of 4 s. */
const transcodeVbv = (kbps: number): Vbv => ({ maxrateKbps: 2 * kbps, bufsizeKbit: 4 * kbps });

function levelOf(
  width: number,
  height: number,
  vbv: Vbv,
  frameRate = 25,
  variableFrameRate = false,
): string | undefined {
  return h264Level({ width, height, frameRate, variableFrameRate }, vbv);
}

describe('H.264 level (x264 caps frames at levels 3.1–4.0)', () => {
  it('declares 4.1 where the picture or its VBV is past level 3 and within 4.1', () => {
    expect(levelOf(1280, 720, transcodeVbv(2000))).to.equal('4.1');
    expect(levelOf(1920, 1080, transcodeVbv(4000), 30)).to.equal('4.1');
    // 720p60: 216000 macroblocks a second, within 4.1's 245760.
    expect(levelOf(1280, 720, transcodeVbv(1000), 60)).to.equal('4.1');
    // 854x480 at 30 fps: 48600 macroblocks a second, past level 3's 40500.
    expect(levelOf(854, 480, transcodeVbv(2000), 30)).to.equal('4.1');
    // 360p fits level 3 by size, but a 16 Mbit buffer is past its 12.5 (High).
    expect(levelOf(640, 360, transcodeVbv(4000))).to.equal('4.1');
    // A 720p rung of the stream ladder: 1.2× for 1 s.
    expect(levelOf(1280, 720, { maxrateKbps: 3360, bufsizeKbit: 3360 })).to.equal('4.1');
  });

  it("leaves x264's choice where level 3 holds the output (its ratio is 2 already)", () => {
    expect(levelOf(640, 360, transcodeVbv(1000))).to.equal(undefined);
    // 720x480 at 30 fps: level 3's 40500 macroblocks a second exactly.
    expect(levelOf(720, 480, transcodeVbv(2000), 30)).to.equal(undefined);
    expect(levelOf(640, 360, { maxrateKbps: 960, bufsizeKbit: 960 })).to.equal(undefined);
  });

  it("leaves x264's choice past 4.1 (it takes 4.2 or above, ratio 2) and for unknown rates", () => {
    expect(levelOf(1920, 1080, transcodeVbv(4000), 60)).to.equal(undefined);
    expect(levelOf(2560, 1440, transcodeVbv(4000))).to.equal(undefined);
    // A strip 257 macroblocks wide: within 4.1's frame size, past its side, sqrt(8 × 8192).
    expect(levelOf(4112, 256, transcodeVbv(1000))).to.equal(undefined);
    expect(levelOf(4096, 256, transcodeVbv(1000))).to.equal('4.1');
    expect(levelOf(1280, 720, { maxrateKbps: 70000, bufsizeKbit: 70000 })).to.equal(undefined);
    expect(levelOf(1280, 720, transcodeVbv(2000), 0)).to.equal(undefined);
    expect(levelOf(1280, 720, transcodeVbv(2000), 30, true)).to.equal(undefined);
  });
});
