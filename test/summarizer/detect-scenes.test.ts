import { expect } from 'chai';
import { detectCuts } from '../../services/summarizer/detect-scenes.ts';
import {
  ANALYSIS_FRAME_BYTES,
  colourHistogram,
  createFrameChangeReader,
  frameChange,
  histogramDistance,
  lumaDifference,
  type FrameChange,
} from '../../services/summarizer/frame-features.ts';

const solid = (r: number, g: number, b: number): Uint8Array => {
  const frame = new Uint8Array(ANALYSIS_FRAME_BYTES);
  for (let i = 0; i < frame.length; i += 3) [frame[i], frame[i + 1], frame[i + 2]] = [r, g, b];
  return frame;
};

const rounded = (c: FrameChange): number[] => [
  Math.round(c.colour * 1000) / 1000,
  Math.round(c.motion * 1000) / 1000,
];

describe('frame features', () => {
  it('histogram distance: 0 for the same colours, 1 for none in common, small for a small object', () => {
    const red = colourHistogram(solid(250, 0, 0));
    expect(histogramDistance(red, red)).to.equal(0);
    expect(histogramDistance(red, colourHistogram(solid(0, 0, 250)))).to.be.closeTo(2 / 3, 1e-9);
    expect(
      histogramDistance(colourHistogram(solid(0, 0, 0)), colourHistogram(solid(255, 255, 255))),
    ).to.be.closeTo(1, 1e-9);
    const withBox = solid(250, 0, 0);
    withBox.fill(255, 0, 300);
    expect(histogramDistance(red, colourHistogram(withBox))).to.be.below(0.05);
  });

  it('luma difference: 0 for the same frame, 1 from black to white', () => {
    expect(lumaDifference(solid(9, 9, 9), solid(9, 9, 9))).to.equal(0);
    expect(lumaDifference(solid(0, 0, 0), solid(255, 255, 255))).to.be.closeTo(1, 1e-9);
  });

  it('the reader assembles frames across chunks of any size and reports each change once', () => {
    const stream = Buffer.concat([solid(0, 0, 0), solid(0, 0, 0), solid(255, 255, 255)]);
    for (const size of [1, 1000, ANALYSIS_FRAME_BYTES, stream.length]) {
      const reader = createFrameChangeReader();
      for (let i = 0; i < stream.length; i += size) reader.write(stream.subarray(i, i + size));
      expect(reader.changes.map(rounded), `chunks of ${size}`).to.deep.equal([
        [0, 0],
        [0, 0],
        [1, 1],
      ]);
    }
  });

  it('skips and limits frames, so stretches analysed apart join on the sample grid', () => {
    const frames = [solid(0, 0, 0), solid(10, 10, 10), solid(255, 255, 255), solid(0, 0, 255)];
    const reader = createFrameChangeReader({ skip: 1, limit: 2 });
    reader.write(Buffer.concat(frames));
    expect(reader.changes.map(rounded)).to.deep.equal([
      [0, 0],
      [1, 0.961],
    ]);
    expect(reader.first()).to.deep.equal(frames[1]);
    expect(reader.last()).to.deep.equal(frames[2]);
    expect(
      rounded(frameChange(frames[2] ?? solid(0, 0, 0), frames[3] ?? solid(0, 0, 0))),
    ).to.deep.equal([0.667, 0.886]);
  });
});

describe('cut detection', () => {
  const still = (n: number): FrameChange[] =>
    Array.from({ length: n }, () => ({ colour: 0, motion: 0 }));
  const busy = (n: number, level = 1): FrameChange[] =>
    Array.from({ length: n }, (_, i) => ({
      colour: level * (0.05 + 0.05 * (i % 3)),
      motion: level * 0.2,
    }));

  it('finds a hard cut between still scenes, at the sample that shows the new scene', () => {
    expect(detectCuts([...still(10), { colour: 0.6, motion: 0.4 }, ...still(10)])).to.deep.equal([
      10,
    ]);
  });

  it('a busy scene does not cut itself to pieces, yet a real cut inside busy scenes is found', () => {
    expect(detectCuts(busy(40, 2.5))).to.deep.equal([]);
    expect(detectCuts([...busy(20), { colour: 0.9, motion: 0.5 }, ...busy(20)])).to.deep.equal([
      20,
    ]);
  });

  it('a burst of motion in a still scene is no cut', () => {
    const burst = [0.06, 0.14, 0.12, 0.06].map((colour) => ({ colour, motion: 0.08 }));
    expect(detectCuts([...still(10), ...burst, ...still(10)])).to.deep.equal([]);
  });

  it('two strong samples in a row are one cut, at the first', () => {
    expect(
      detectCuts([
        ...still(10),
        { colour: 0.95, motion: 0.5 },
        { colour: 0.9, motion: 0.55 },
        ...still(10),
      ]),
    ).to.deep.equal([10]);
  });
});
