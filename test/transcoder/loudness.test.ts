// Issue 30's loudness normalisation through the transcode handler (a stream's: test/streamer/) with real ffmpeg: each output
// measured by ffmpeg's ebur128 summary, apart from the service's own measure.
import { expect } from 'chai';
import { join } from 'node:path';
import type {
  JobRequested,
  JobResult,
  TranscodeSpec,
} from '../../services/core/contracts/types.generated.ts';
import { createTranscodeHandler } from '../../services/transcoder/handle-transcode.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { transcodeRequested } from '../support/job-requests.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { testJobContext } from '../support/job-context.ts';
import { generateClip } from '../support/generate-clip.ts';
import {
  ebur128Summary,
  makeLoudnessInput,
  type Ebur128Summary,
} from '../support/loudness-inputs.ts';

describe('loudness normalisation of a transcode (services/core/media/loudness.ts)', function () {
  this.timeout(180_000);
  let files: TestServer;
  const handler = createTranscodeHandler(testMediaJobDeps());
  const ctx = testJobContext('transcode');
  const inputs: Record<string, Ebur128Summary> = {};
  const job = (input: string, output: string, spec: TranscodeSpec): JobRequested =>
    transcodeRequested(files, input, output, {
      jobId: '00000000-0000-4000-8000-000000000030',
      transcode: { ...spec, quality: { report: false } },
    });

  before(async () => {
    files = await startTestServer();
    for (const shape of ['quiet', 'loud', 'clicks'] as const) {
      const path = join(files.dir, `${shape}.mp4`);
      await makeLoudnessInput(path, shape);
      inputs[shape] = await ebur128Summary(path);
    }
  });
  after(() => files.close());

  const cases = [
    // 15 dB under EBU R128's −23 LUFS: one gain up.
    { shape: 'quiet', target: -23, encoder: 'h264', container: 'mp4', mode: 'linear' },
    // 10 dB over −23: one gain down, into WebM's Opus.
    { shape: 'loud', target: -23, encoder: 'vp9', container: 'webm', mode: 'linear' },
    // Quiet speech with clicks at −3.5 dBTP brought to −16: a linear gain would put the clicks
    // 12 dB over the ceiling, so the gain must follow the audio.
    { shape: 'clicks', target: -16, encoder: 'h264', container: 'mp4', mode: 'dynamic' },
  ] as const;
  for (const c of cases) {
    it(`${c.shape} input to ${c.target} LUFS (${c.encoder}/${c.container}): within 0.3 LU, true peak under −1 dBTP, ${c.mode}`, async () => {
      const input = inputs[c.shape];
      if (!input) throw new Error('input not measured');
      const name = `out-${c.shape}.${c.container}`;
      const spec = { encoder: c.encoder, container: c.container, bitrateKbps: '1000' } as const;
      const result: JobResult = await handler(
        job(`${c.shape}.mp4`, name, { ...spec, loudness: { targetLufs: c.target } }),
        ctx,
      );
      const output = await ebur128Summary(join(files.dir, name));
      const says = `input ${JSON.stringify(input)}, output ${JSON.stringify(output)}`;
      // The input is as far from the target as the case says.
      expect(Math.abs(input.integratedLufs - c.target), says).to.be.at.least(9.5);
      expect(output.integratedLufs, says).to.be.closeTo(c.target, 0.3);
      expect(output.truePeakDbtp, says).to.be.below(-1);
      // A linear gain keeps the range; the dynamic mode may narrow it, never widen it.
      if (c.mode === 'linear') expect(output.rangeLu, says).to.be.closeTo(input.rangeLu, 0.5);
      else expect(output.rangeLu, says).to.be.at.most(input.rangeLu + 0.5);
      const report = result.loudness;
      expect(report?.mode, says).to.equal(c.mode);
      expect(report?.targetLufs).to.equal(c.target);
      expect(report?.truePeakDbtp).to.equal(-1);
      expect(report?.input.integratedLufs).to.be.closeTo(input.integratedLufs, 0.3);
      expect(report?.input.truePeakDbtp).to.be.closeTo(input.truePeakDbtp, 0.5);
      expect(report?.output.integratedLufs).to.be.closeTo(output.integratedLufs, 0.3);
      expect(report?.output.rangeLu).to.be.closeTo(output.rangeLu, 0.3);
      expect(report?.output.truePeakDbtp).to.be.closeTo(output.truePeakDbtp, 0.5);
      if (c.mode === 'linear')
        expect(report?.gainDb).to.be.closeTo(c.target - input.integratedLufs, 0.3);
      else expect(report?.gainDb).to.be.above(c.target - input.integratedLufs);
    });
  }

  it('without the option the audio is left as it was and the result has no loudness', async () => {
    const spec = { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' } as const;
    const result = await handler(job('quiet.mp4', 'out-plain.mp4', spec), ctx);
    const output = await ebur128Summary(join(files.dir, 'out-plain.mp4'));
    expect(output.integratedLufs).to.be.closeTo(inputs['quiet']?.integratedLufs ?? 0, 0.5);
    expect(result.loudness).to.equal(undefined);
  });

  it('an input without audio: the option is ignored, the job succeeds', async () => {
    await generateClip(join(files.dir, 'silent-video.mp4'), {
      seconds: 2,
      width: 160,
      height: 120,
    });
    const spec = { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' } as const;
    const result = await handler(
      job('silent-video.mp4', 'out-noaudio.mp4', { ...spec, loudness: { targetLufs: -16 } }),
      ctx,
    );
    expect(result.loudness).to.equal(undefined);
    expect(result.output).to.not.have.property('audioCodec');
  });
});
