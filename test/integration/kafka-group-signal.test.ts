import { expect } from 'chai';
import { fileCallbacks } from '../support/job-requests.ts';
import { transcodeUnderWay, useStackWithLongClip } from '../support/kafka-stack.ts';

describe('Kafka: Ctrl-C to a transcoder’s process group drains it, it does not fail the job', function () {
  this.timeout(300_000);
  const fixture = useStackWithLongClip({ transcoders: 0, notifiers: 1 });

  it('SIGINT to the group mid-transcode: handed back within the grace, then succeeds once on the next transcoder', async () => {
    const [files, stack] = [fixture.files(), fixture.stack()];
    const first = await stack.start('transcoder', { ownGroup: true });
    const { status, id } = await transcodeUnderWay(stack, files, fileCallbacks(files));
    expect(status).to.equal(200);

    first.signalGroup('SIGINT');
    expect(await first.groupGone(30_000), 'the transcoder and its ffmpeg ended').to.equal(true);
    const msgs = first.logs.map((r) => r['msg']);
    expect(msgs).to.include('service.stopping');
    expect(msgs, 'handed back, not failed').to.include('job.handed_back');
    expect(msgs).to.not.include('job.failed');
    expect(msgs).to.not.include('job.retry_scheduled');

    await stack.start('transcoder');
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 180_000);
    expect(callback.body['status']).to.equal('succeeded');
    await new Promise((r) => setTimeout(r, 1000));
    expect(files.callbacks.filter((c) => c.body['jobId'] === id)).to.have.length(1);
    expect((await stack.status(id))['status']).to.equal('succeeded');
  });
});
