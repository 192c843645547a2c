import { expect } from 'chai';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MediaError } from '../../services/core/errors.ts';
import {
  collectPaletteSamples,
  maxSampleFrames,
  PALETTE_SAMPLES_MAX_BYTES,
  paletteSampleSize,
  type PaletteSamples,
} from '../../services/summarizer/palette-samples.ts';

describe('GIF palette samples', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'palette-samples-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('are 160 wide with the aspect kept, never wider than the input, and fit the budget when long', () => {
    expect(paletteSampleSize({ width: 1280, height: 720 }, 600)).to.deep.equal({
      width: 160,
      height: 90,
    });
    expect(paletteSampleSize({ width: 720, height: 1280 }, 60)).to.deep.equal({
      width: 160,
      height: 284,
    });
    expect(paletteSampleSize({ width: 100, height: 50 }, 60)).to.deep.equal({
      width: 100,
      height: 50,
    });
    for (const hours of [1, 10]) {
      const seconds = hours * 3600;
      const size = paletteSampleSize({ width: 1920, height: 1080 }, seconds);
      expect(size.width).to.be.below(160);
      expect((seconds * 2 + 1) * size.width * size.height * 3).to.be.at.most(
        PALETTE_SAMPLES_MAX_BYTES,
      );
    }
    // Each part's file is capped too, whatever the container claims its duration is.
    const size = { width: 160, height: 90 };
    expect(maxSampleFrames(size, 2) * 2 * 160 * 90 * 3).to.be.at.most(PALETTE_SAMPLES_MAX_BYTES);
    expect(maxSampleFrames(size, 2)).to.be.above(600);
  });

  it("copies the samples inside the segments, skipping a later part's lead sample and what a part did not write", async () => {
    // Frames of 2×1 rgb24 (6 bytes), each filled with a number naming it.
    const frameOf = (n: number): Buffer => Buffer.alloc(6, n);
    // Part 0: samples 0–9 (0 to 5 s). Part 1 (from 5 s): its lead (50), then samples 10–12 only.
    await writeFile(join(dir, 'p0.rgb'), Buffer.concat([...Array(10).keys()].map(frameOf)));
    await writeFile(join(dir, 'p1.rgb'), Buffer.concat([50, 10, 11, 12].map(frameOf)));
    const samples: PaletteSamples = {
      width: 2,
      height: 1,
      paths: [join(dir, 'p0.rgb'), join(dir, 'p1.rgb')],
      parts: [{ startSeconds: 0, seconds: 5 }, { startSeconds: 5 }],
    };
    const out = join(dir, 'chosen.rgb');
    const count = await collectPaletteSamples(
      samples,
      [
        { startSeconds: 1, endSeconds: 2 }, // samples 2, 3
        { startSeconds: 4.25, endSeconds: 5.5 }, // 9 (part 0), 10 (part 1, after its lead)
        { startSeconds: 6, endSeconds: 7.2 }, // 12, then 13 and 14 were never written
      ],
      out,
    );
    const bytes = await readFile(out);
    const got = [...Array(bytes.length / 6).keys()].map((i) => bytes[i * 6]);
    expect(got).to.deep.equal([2, 3, 9, 10, 12]);
    expect(count).to.equal(5);
  });

  it('fails the job when no sample lies in the segments', async () => {
    await writeFile(join(dir, 'empty.rgb'), Buffer.alloc(0));
    const error = await collectPaletteSamples(
      { width: 2, height: 1, paths: [join(dir, 'empty.rgb')], parts: [{ startSeconds: 0 }] },
      [{ startSeconds: 0, endSeconds: 1 }],
      join(dir, 'none.rgb'),
    ).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).code).to.equal('transcode_failed');
  });
});
