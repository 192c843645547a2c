import { expect } from 'chai';
import { cpuPlan } from '../../../services/core/runtime/create-runtime.ts';
import { loadConfig } from '../../../services/core/config.ts';

describe('CPU slots and ffmpeg threads (cpuPlan)', () => {
  it('by default: one slot per core, each ffmpeg with threads for every core', () => {
    expect(loadConfig({}).workerConcurrency).to.equal(0);
    expect(cpuPlan(0, 2)).to.deep.equal({ cpuSlots: 2, ffmpegThreads: 2 });
    expect(cpuPlan(0, 8)).to.deep.equal({ cpuSlots: 8, ffmpegThreads: 8 });
    expect(cpuPlan(0, 1)).to.deep.equal({ cpuSlots: 1, ffmpegThreads: 1 });
  });

  it('WORKER_CONCURRENCY=N: N slots sharing the cores', () => {
    expect(cpuPlan(1, 2)).to.deep.equal({ cpuSlots: 1, ffmpegThreads: 2 });
    expect(cpuPlan(2, 8)).to.deep.equal({ cpuSlots: 2, ffmpegThreads: 4 });
    expect(cpuPlan(4, 2)).to.deep.equal({ cpuSlots: 4, ffmpegThreads: 1 });
  });
});
