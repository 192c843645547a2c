import { expect } from 'chai';
import { eventually, transcodeUnderWay, useStackWithLongClip } from '../support/kafka-stack.ts';

describe('Kafka: a worker stopping on SIGTERM shows it', function () {
  this.timeout(300_000);
  const fixture = useStackWithLongClip({ transcoders: 0, notifiers: 0 });

  it('/readyz turns 503 at once, media_worker_draining is 1, and the log names the job it waits for', async () => {
    const [files, stack] = [fixture.files(), fixture.stack()];
    const worker = await stack.start('transcoder');
    const started = worker.logs.find((r) => r['msg'] === 'transcoder.started');
    const ops = `http://127.0.0.1:${String(started?.['metricsPort'])}`;
    expect((await fetch(`${ops}/readyz`)).status).to.equal(200);
    expect(await fetch(`${ops}/metrics`).then((r) => r.text())).to.include(
      'media_worker_draining{kind="transcode"} 0',
    );
    const { id } = await transcodeUnderWay(stack, files);

    const signalled = performance.now();
    worker.child.kill('SIGTERM');
    await eventually(
      async () => (await fetch(`${ops}/readyz`)).status === 503,
      2000,
      '/readyz to say 503',
    );
    const notReadyMs = performance.now() - signalled;
    expect(await fetch(`${ops}/metrics`).then((r) => r.text())).to.include(
      'media_worker_draining{kind="transcode"} 1',
    );
    const draining = await worker.waitForLog((r) => r['msg'] === 'worker.draining', 2000);
    expect(draining).to.deep.include({ kind: 'transcode', group: 'transcoder', graceMs: 3000 });
    const [job] = draining['jobs'] as Record<string, unknown>[];
    expect(job).to.deep.include({ jobId: id, attempt: 1 });
    expect(job?.['progressPercent']).to.be.greaterThan(0);
    expect(job?.['expectedRemainingMs']).to.be.a('number');
    expect(await new Promise((resolve) => worker.child.once('exit', resolve))).to.equal(0);
    expect(worker.logs.find((r) => r['msg'] === 'worker.drained')).to.deep.include({
      waitedFor: 1,
    });
    console.log(`      /readyz said 503 ${notReadyMs.toFixed(0)} ms after SIGTERM`);
  });
});
