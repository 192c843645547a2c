import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { buildTranscodeArgs } from '../../services/transcoder/build-transcode-args.ts';
import { readTestInput } from '../support/job-input.ts';

const run = promisify(execFile);
const ffmpeg = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
const ffprobe = process.env['TEST_FFPROBE'] ?? 'ffprobe';

/** Level 3.1's cap on a 720p frame: 3600 macroblocks × 384 bytes / MinCR 4. */
const LEVEL_3_1_FRAME_CAP = (3600 * 384) / 4;

/**
 * 3 s of one detailed 720p still (grain-like noise, softened): its keyframe needs more than a
 * quarter of a raw picture at 2000 kb/s.
 */
async function detailedStill(dir: string): Promise<string> {
  const still = join(dir, 'still.png');
  const picture = "nullsrc=s=1280x720:d=1,geq=lum='random(1)*255':cb=128:cr=128,gblur=sigma=0.7";
  await run(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', picture, '-frames:v', '1', still]);
  const clip = join(dir, 'input.mp4');
  await run(ffmpeg, [
    ...['-v', 'error', '-loop', '1', '-framerate', '25', '-t', '3', '-i', still],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', '-pix_fmt', 'yuv420p', clip],
  ]);
  return clip;
}

/** The level ffprobe reads from the output and its largest keyframe, bytes. */
async function levelAndKeyframe(path: string): Promise<{ level: number; keyframe: number }> {
  const { stdout } = await run(ffprobe, [
    ...['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=level:packet=size,flags'],
    ...['-of', 'json', path],
  ]);
  const probed = JSON.parse(stdout) as {
    streams: { level: number }[];
    packets: { size: string; flags: string }[];
  };
  const keyframes = probed.packets.filter((p) => p.flags.startsWith('K')).map((p) => +p.size);
  return { level: probed.streams[0]?.level ?? 0, keyframe: Math.max(...keyframes) };
}

describe('H.264 level of a 720p transcode (real x264)', function () {
  this.timeout(120_000);
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'h264-level-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("declares 4.1, and the keyframe of a detailed still passes level 3.1's cap that x264 would hold", async () => {
    const input = await readTestInput(await detailedStill(dir), dir);
    const encode = async (name: string, drop: boolean): Promise<string> => {
      const outputPath = join(dir, `${name}.mp4`);
      const passes = buildTranscodeArgs({
        spec: { encoder: 'h264', container: 'mp4', bitrateKbps: '2000' },
        input,
        outputPath,
        size: { width: 1280, height: 720 },
        threads: 2,
        passLogPrefix: join(dir, `${name}-pass`),
      });
      for (const pass of passes) {
        const i = pass.indexOf('-level:v');
        expect(i, 'the transcoder names the level').to.be.greaterThan(0);
        const args = drop ? [...pass.slice(0, i), ...pass.slice(i + 2)] : pass;
        await run(ffmpeg, ['-v', 'error', '-nostdin', ...args]);
      }
      return outputPath;
    };
    const ours = await levelAndKeyframe(await encode('level-4-1', false));
    expect(ours.level).to.equal(41);
    expect(ours.keyframe).to.be.greaterThan(LEVEL_3_1_FRAME_CAP);
    // The same passes with x264's own choice: level 3.1 and the keyframe held under its cap.
    const chosen = await levelAndKeyframe(await encode('x264-choice', true));
    expect(chosen.level).to.equal(31);
    expect(chosen.keyframe).to.be.at.most(LEVEL_3_1_FRAME_CAP);
  });
});
