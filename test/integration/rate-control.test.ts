// Issue 27's rules for the transcoder's rate control, on the short quality corpus: per encoder,
// the service's own encode (encodeToRate) against an anchor encoded here (same encoder,
// two passes, same bitrate, no VBV, slow-class preset). Needs the libvmaf ffmpeg of the test
// services (TEST_VMAF_FFMPEG): unset, the suite fails, as every integration test does without
// its services. No rule here compares CPU time, so an anchor's figures are kept between runs
// (test/support/anchor-cache.ts, keyed by the ffmpeg builds, the clip's bytes and the anchor's
// recipe): a run encodes and measures the service's side. bench/quality.ts measures the same on
// the full corpus, both sides every time, with CPU.
import { expect } from 'chai';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { corpusClip } from '../support/quality-corpus.ts';
import {
  ENCODERS,
  RULES,
  compareWithAnchor,
  testVmafFfmpeg,
  peakBoundBits,
  referenceOf,
  verdicts,
  type EncodeMeasure,
} from '../support/rate-control-anchor.ts';

const NATURAL = ['camera-short', 'animation-short', 'fast-motion-short'];
const SYNTHETIC = ['testsrc-noise-short', 'smpte-bars-short', 'mandelbrot-short'];
// At most 640x360 and 5 s: a rate most of these clips can fill. At the contract's lowest,
// 1000 kb/s, x264's anchor already reached VMAF 99.4 on camera-short and still pictures stop
// short of it, so the rules would hardly be tested.
const KBPS = 600;

const figures = (m: EncodeMeasure): string =>
  `${m.kbps.toFixed(1)} kb/s, peaks ${(m.peak1sBits / 1000).toFixed(0)} kbit (1 s) ` +
  `${(m.peak2sBits / 1000).toFixed(0)} kbit (2 s), VMAF mean ${m.quality.vmafMean.toFixed(2)} ` +
  `p5 ${m.quality.vmafP5.toFixed(2)}`;

describe('rate control against the two-pass anchor (services/transcoder/rate-control.ts)', function () {
  // Per case two encodes and two VMAF runs of a 5 s clip (one of each once the anchor is kept):
  // about a minute of CPU for x265 and VP9, but over three minutes of wall time on 2 cores
  // shared with other work (load 15).
  this.timeout(600_000);
  let dir: string;
  let tools: { ffmpeg: string; vmafFfmpeg: string };
  const offRequest = new Map<string, string[]>();

  before(async () => {
    tools = { ffmpeg: process.env['TEST_FFMPEG'] ?? 'ffmpeg', vmafFfmpeg: testVmafFfmpeg() };
    dir = await mkdtemp(join(tmpdir(), 'media-rate-control-'));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const encoder of ENCODERS) {
    for (const name of [...NATURAL, ...SYNTHETIC]) {
      it(`${encoder} on ${name} at ${KBPS} kb/s: bitrate within 5 % (or at the anchor's ceiling), peaks within the bound, VMAF as the anchor's`, async () => {
        const clip = await corpusClip(name);
        const caseDir = join(dir, `${encoder}-${name}`);
        await mkdir(caseDir);
        const c = {
          clipPath: clip.path,
          width: clip.width,
          height: clip.height,
          encoder,
          kbps: KBPS,
        };
        const comparison = await compareWithAnchor(tools, c, caseDir, { reuseAnchor: true });
        const { ours, anchor, retarget } = comparison;
        const v = verdicts(encoder, KBPS, comparison);
        const reference = referenceOf(KBPS, anchor, retarget?.measure);
        const again = retarget
          ? `; anchor at ${retarget.targetKbps} kb/s ${figures(retarget.measure)}`
          : '';
        const says = `ours ${figures(ours)}; anchor ${figures(anchor)}${again}`;
        if (!v.withinRequest)
          offRequest.set(encoder, [...(offRequest.get(encoder) ?? []), `${name}: ${says}`]);

        // Within 5 % of the request, or, where the picture stops short of it (the anchor asked
        // for more spends no more), no more than the anchor. The picture is judged against the
        // anchor's run nearest the request.
        expect(v.bitrate, `bitrate: ${says}`).to.equal(true);
        expect(ours.peak1sBits, `1 s peak: ${says}`).to.be.at.most(peakBoundBits(encoder, KBPS, 1));
        expect(ours.peak2sBits, `2 s peak: ${says}`).to.be.at.most(peakBoundBits(encoder, KBPS, 2));
        expect(ours.quality.vmafMean, says).to.be.at.least(
          reference.quality.vmafMean - RULES.vmafMeanDrop,
        );
        expect(ours.quality.vmafP5, says).to.be.at.least(
          reference.quality.vmafP5 - RULES.vmafP5Drop,
        );
      });
    }

    if (encoder === 'vp9')
      // libvpx-vp9's two passes overshoot where a scene cut falls in the last frames of a short
      // clip (the animation's, 4 frames before its end): the final pass must run again.
      it("vp9 on the 5.3 s animation at 240p 300 kb/s, where two passes overshoot: the final pass runs again, within 5 % at the anchor's VMAF", async () => {
        const clip = await corpusClip('animation');
        const caseDir = join(dir, 'vp9-animation-overshoot');
        await mkdir(caseDir);
        const c = { clipPath: clip.path, width: 426, height: 240, encoder, kbps: 300 };
        const { ours, anchor } = await compareWithAnchor(tools, c, caseDir, { reuseAnchor: true });
        const says = `ours ${figures(ours)}; anchor ${figures(anchor)}`;
        expect(anchor.kbps, `the case overshoots no more: ${says}`).to.be.above(300 * 1.05);
        expect(ours.retried, says).to.not.equal(undefined);
        expect(ours.retried?.firstKbps, says).to.be.above(300 * 1.04);
        expect(Math.abs(ours.kbps - 300), says).to.be.at.most(300 * RULES.bitrateShare);
        expect(ours.quality.vmafMean, says).to.be.at.least(
          anchor.quality.vmafMean - RULES.vmafMeanDrop,
        );
        expect(ours.quality.vmafP5, says).to.be.at.least(anchor.quality.vmafP5 - RULES.vmafP5Drop);
      });

    // libvpx's two passes end 2–4 % under 600 kb/s on these 5 s clips, the anchor as ours: that
    // is not the ceiling's exception, as long as ours lands within ±5 %.
    it(`${encoder}: most clips met the request itself, so the rules above were tested at the request`, () => {
      const off = offRequest.get(encoder) ?? [];
      expect(off.length, off.join('\n')).to.be.at.most(2);
    });
  }
});
