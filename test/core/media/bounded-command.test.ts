import { expect } from 'chai';
import {
  boundedCommand,
  stoppedFromOutside,
} from '../../../services/core/media/bounded-command.ts';

describe('bounded commands: a stop from outside is not the input’s fault', () => {
  it('runs the binary in a process group of its own, still under pdeathsig and the memory cap', () => {
    const [command, args] = boundedCommand('ffmpeg', ['-version'], { memoryLimitBytes: 1024 });
    expect([command, ...args]).to.deep.equal([
      'setsid',
      'setpriv',
      '--pdeathsig',
      'KILL',
      '--',
      'prlimit',
      '--data=1024',
      '--',
      'ffmpeg',
      '-version',
    ]);
  });

  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGKILL', 'SIGQUIT'])
    it(`an ffmpeg or ffprobe killed by ${signal} is interrupted (retryable)`, () => {
      for (const binary of ['ffmpeg', 'ffprobe'] as const) {
        const error = stoppedFromOutside(binary, null, signal);
        expect(error?.code, binary).to.equal('interrupted');
        expect(error?.retryable, binary).to.equal(true);
      }
    });

  it("ffmpeg's exit code after it caught SIGINT or SIGTERM (255) is interrupted", () => {
    expect(stoppedFromOutside('ffmpeg', 255, null)?.code).to.equal('interrupted');
  });

  it('a crash, an error exit, or a 255 from ffprobe is left to the other failure rules', () => {
    for (const signal of ['SIGSEGV', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGILL'])
      expect(stoppedFromOutside('ffmpeg', null, signal), signal).to.equal(undefined);
    expect(stoppedFromOutside('ffmpeg', 1, null)).to.equal(undefined);
    expect(stoppedFromOutside('ffmpeg', 0, null)).to.equal(undefined);
    expect(stoppedFromOutside('ffprobe', 255, null)).to.equal(undefined);
  });
});
