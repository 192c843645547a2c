import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { MediaError } from '../../../services/core/errors.ts';
import { createFfmpegRunner } from '../../../services/core/media/run-ffmpeg.ts';

const runFfmpeg = createFfmpegRunner(process.env['TEST_FFMPEG'] ?? 'ffmpeg', {
  memoryLimitBytes: 2 * 1024 ** 3,
});
const frames = (seconds: number): string[] => [
  '-f',
  'lavfi',
  '-i',
  `testsrc2=size=64x36:rate=10:duration=${seconds}`,
  '-f',
  'rawvideo',
  '-pix_fmt',
  'gray',
  'pipe:1',
];

describe('ffmpeg runner with stdout as data', function () {
  this.timeout(30_000);

  it('hands over every byte of stdout and still reports progress (on fd 3)', async () => {
    let bytes = 0;
    const progress: number[] = [];
    await runFfmpeg(frames(2), {
      signal: new AbortController().signal,
      stallTimeoutMs: 10_000,
      onStdout: (chunk) => (bytes += chunk.length),
      onProgress: (p) => progress.push(p.outTimeSeconds),
    });
    expect(bytes).to.equal(20 * 64 * 36);
    expect(progress.at(-1)).to.be.closeTo(2, 0.2);
  });

  it("a consumer that throws stops ffmpeg, and its error is the run's", async () => {
    const error = await runFfmpeg(frames(600), {
      signal: new AbortController().signal,
      stallTimeoutMs: 10_000,
      onStdout: () => {
        throw new MediaError('input_unsupported', 'bad frames');
      },
    }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).message).to.equal('bad frames');
  });
});

describe('ffmpeg runner and signals from outside', function () {
  this.timeout(30_000);

  it("runs ffmpeg in its own process group, and an ffmpeg stopped by someone else's SIGINT is interrupted, not transcode_failed", async () => {
    const output = join(await mkdtemp(join(tmpdir(), 'ffmpeg-signal-')), 'marker-out.nut');
    const run = runFfmpeg(
      ['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25', '-t', '600', '-y', output],
      { signal: new AbortController().signal, stallTimeoutMs: 10_000 },
    ).catch((e: unknown) => e);
    const pid = await pidWithArgument(output);
    expect(processGroupOf(await readStat(pid)), 'ffmpeg has a process group of its own').to.equal(
      pid,
    );
    expect(processGroupOf(await readStat(pid))).to.not.equal(
      processGroupOf(await readStat(process.pid)),
    );
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid, 'SIGINT');
    const error = await run;
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).code).to.equal('interrupted');
    expect((error as MediaError).retryable).to.equal(true);
    await rm(dirname(output), { recursive: true, force: true });
  });
});

async function pidWithArgument(arg: string): Promise<number> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    for (const entry of await readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
      // The binary itself, once the setsid/setpriv/prlimit chain has exec'd into it.
      if (cmdline.startsWith('ffmpeg\0') || cmdline.includes('/ffmpeg\0'))
        if (cmdline.split('\0').includes(arg)) return Number(entry);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ffmpeg writing ${arg}`);
}

const readStat = (pid: number): Promise<string> => readFile(`/proc/${pid}/stat`, 'utf8');

/** Field 5 of /proc/<pid>/stat (after the parenthesised command name). */
function processGroupOf(stat: string): number {
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

describe('ffmpeg runner and stalls', function () {
  this.timeout(60_000);

  it('kills an ffmpeg that neither reports progress nor works (waiting on an input nobody writes) as job_timeout', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ffmpeg-stall-'));
    const fifo = join(dir, 'input.fifo');
    execFileSync('mkfifo', [fifo]);
    const started = performance.now();
    const error = await runFfmpeg(['-f', 'nut', '-i', fifo, '-f', 'null', '-'], {
      signal: new AbortController().signal,
      stallTimeoutMs: 1000,
    }).catch((e: unknown) => e);
    const ms = performance.now() - started;
    await rm(dir, { recursive: true, force: true });
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).code).to.equal('job_timeout');
    expect(ms).to.be.within(1000, 5000);
  });

  it('lets an ffmpeg that works without reporting finish: the encoders drained at the end', async () => {
    // libvpx holds 25 frames back (lag) and encodes them after the input ends, when ffmpeg
    // writes no progress; at cpu-used 0 that takes far longer than the stall timeout.
    const stallTimeoutMs = 400;
    let lastProgress = performance.now();
    let longestSilence = 0;
    await runFfmpeg(
      [
        ...['-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25:duration=1.04'],
        ...['-c:v', 'libvpx-vp9', '-deadline', 'good', '-cpu-used', '0', '-b:v', '300k'],
        ...['-lag-in-frames', '25', '-threads', '1', '-f', 'null', '-'],
      ],
      {
        signal: new AbortController().signal,
        stallTimeoutMs,
        onProgress: () => {
          const now = performance.now();
          longestSilence = Math.max(longestSilence, now - lastProgress);
          lastProgress = now;
        },
      },
    );
    // The case is shown only if a silence outlasted the stall timeout (a fast machine might
    // drain 25 frames sooner: then this clip must grow). ffmpeg reports once more at the end.
    expect(longestSilence, 'longest ms without progress').to.be.above(stallTimeoutMs * 2);
  });
});
