import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { generateClip } from '../support/generate-clip.ts';
import { eventually, startKafkaStack, type KafkaStack } from '../support/kafka-stack.ts';
import { startStreamFileServer, type StreamFileServer } from '../support/stream-file-server.ts';

describe('Kafka: a stream job through ingress, media.jobs.stream.v1, the streamer process and the notifier', function () {
  this.timeout(240_000);
  let hooks: TestServer;
  let files: StreamFileServer;
  let stack: KafkaStack;

  before(async () => {
    hooks = await startTestServer();
    files = await startStreamFileServer();
    await generateClip(join(files.dir, 'in.mp4'), {
      seconds: 3,
      width: 320,
      height: 240,
      audio: true,
    });
    stack = await startKafkaStack({ ingresses: 1, transcoders: 0, streamers: 1, notifiers: 1 });
  });
  after(async () => {
    await stack?.close();
    await hooks?.close();
    await files?.close();
  });

  it('succeeds: the ladder is published, the callback and the status carry the manifests', async () => {
    const ack = await stack.submit('/streams', {
      inputUrl: `${files.url}/in.mp4`,
      outputUrl: `${files.url}/out/`,
      segmentSeconds: 1,
      successUrl: `${hooks.url}/callbacks/ok`,
      failureUrl: `${hooks.url}/callbacks/fail`,
    });
    expect(ack.status).to.equal(200);
    const id = String(ack.body['id']);
    const callback = await hooks.waitForCallback((c) => c.body['jobId'] === id, 120_000);
    expect(callback.body).to.include({ kind: 'stream', status: 'succeeded' });
    const result = callback.body['result'] as { stream: { manifests: Record<string, string> } };
    expect(result.stream.manifests).to.deep.equal({
      hls: `${files.url}/out/master.m3u8`,
      dash: `${files.url}/out/manifest.mpd`,
    });
    expect(await readFile(join(files.dir, 'out/manifest.mpd'), 'utf8')).to.contain('<MPD');
    await eventually(
      async () => (await stack.status(id))['status'] === 'succeeded',
      20_000,
      'the status',
    );
    expect(await stack.status(id)).to.include({ type: 'stream' });
  });
});
