import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createRunningJobs } from '../../../services/core/worker/running-jobs.ts';
import { createLogger } from '../../../services/core/observability/logger.ts';
import { createMetrics } from '../../../services/core/observability/metrics.ts';

describe('running jobs: a visible drain', () => {
  it('logs the jobs a stop waits for with how long they may take, and shows the worker draining', async () => {
    let now = 0;
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({
      level: 'info',
      write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
    });
    const metrics = createMetrics(new Registry(), { defaultMetrics: false });
    const running = createRunningJobs(() => now);
    const a = running.start({ jobId: 'a', orgId: 'org-1', attempt: 1 });
    now = 1000;
    running.start({ jobId: 'b', orgId: 'org-2', attempt: 2 });
    now = 4000;
    a.percent = 40;

    const drained = running.drain(log, metrics, { kind: 'transcode', group: 'transcoder' }, 30_000);
    const draining = lines.find((l) => l['msg'] === 'worker.draining');
    expect(draining).to.deep.include({ kind: 'transcode', group: 'transcoder', graceMs: 30_000 });
    expect(draining?.['jobs']).to.deep.equal([
      {
        jobId: 'a',
        orgId: 'org-1',
        attempt: 1,
        runningMs: 4000,
        progressPercent: 40,
        expectedRemainingMs: 6000,
      },
      { jobId: 'b', orgId: 'org-2', attempt: 2, runningMs: 3000, progressPercent: 0 },
    ]);
    const gauge = await metrics.workerDraining.get();
    expect(gauge.values.find((v) => v.labels['kind'] === 'transcode')?.value).to.equal(1);
    expect(gauge.values.find((v) => v.labels['kind'] === 'summary')?.value).to.equal(0);

    now = 5000;
    running.end('a', a, false);
    running.end('b', running.start({ jobId: 'b', orgId: 'org-2', attempt: 2 }), true);
    drained();
    expect(lines.find((l) => l['msg'] === 'worker.drained')).to.deep.include({
      waitedFor: 2,
      handedBack: 1,
      drainMs: 1000,
    });
  });
});
