import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { generateClip } from '../support/generate-clip.ts';
import { transcodeBody } from '../support/job-requests.ts';
import { STACK_KEY, startKafkaStack, type KafkaStack } from '../support/kafka-stack.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';

describe('Kafka: trace context in record headers, from the ingress to the callback', function () {
  this.timeout(180_000);
  let files: TestServer;
  let receiver: CallbackReceiver;
  let otlp: OtlpReceiver;
  let stack: KafkaStack;

  before(async () => {
    files = await startTestServer();
    await generateClip(join(files.dir, 'input.mp4'), { seconds: 2, width: 320, height: 180 });
    receiver = await startCallbackReceiver();
    otlp = await startOtlpReceiver();
    stack = await startKafkaStack({
      ingresses: 1,
      transcoders: 1,
      notifiers: 1,
      extraEnv: {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        CALLBACK_BACKOFF_MS: '200',
        CALLBACK_BACKOFF_MAX_MS: '500',
      },
    });
  });
  after(async () => {
    await stack?.close();
    await files?.close();
    await otlp?.close();
    await receiver?.down().catch(() => {});
  });

  it('ingress, transcoder and notifier export spans of the caller trace; every callback attempt carries it', async () => {
    // The first attempt is refused with 503: its retry goes through a delay topic and must keep
    // the trace headers on the way.
    receiver.answer = (a) => (a.attempt === 1 ? 503 : 200);
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const ingress = stack.ingresses[0];
    if (!ingress) throw new Error('no ingress');
    const res = await fetch(`${ingress.url}/transcode`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${callerSpan}-01`,
      },
      body: JSON.stringify(
        transcodeBody(files, 'input.mp4', 'out.mp4', {
          apiKey: STACK_KEY,
          successUrl: receiver.url,
        }),
      ),
    });
    expect(res.status).to.equal(200);
    const id = ((await res.json()) as { id: string }).id;

    await receiver.waitFor((a) => a.answered === 200, 90_000);
    expect(receiver.received.map((a) => a.attempt)).to.deep.equal([1, 2]);
    for (const attempt of receiver.received)
      expect(attempt.headers['traceparent'], `attempt ${attempt.attempt}`).to.match(
        new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`),
      );

    await otlp.waitFor(
      (spans) =>
        spans.filter((s) => s.traceId === traceId && s.name === 'callback delivery').length === 2,
      30_000,
    );
    const spans = otlp.spans.filter((s) => s.traceId === traceId);
    const services = (name: string) => spans.filter((s) => s.name === name).map((s) => s.service);
    expect(services('POST /transcode')).to.deep.equal(['media-ingress']);
    expect(services('publish media.jobs.transcode.v1')).to.deep.equal(['media-ingress']);
    expect(services('transcode job')).to.deep.equal(['media-transcoder']);
    for (const step of ['download', 'ffmpeg encode', 'upload'])
      expect(services(step), step).to.deep.equal(['media-transcoder']);
    expect(services('callback delivery')).to.deep.equal(['media-notifier', 'media-notifier']);

    const publish = spans.find((s) => s.name === 'publish media.jobs.transcode.v1');
    const job = spans.find((s) => s.name === 'transcode job');
    expect(job?.parentSpanId).to.equal(publish?.spanId);
    expect(job?.attributes['media.job.id']).to.equal(id);
    // The job span is the parent of both attempts (read from the records' headers).
    const deliveries = spans.filter((s) => s.name === 'callback delivery');
    expect(deliveries.map((d) => d.parentSpanId)).to.deep.equal([job?.spanId, job?.spanId]);
    expect(deliveries.map((d) => d.statusCode).sort()).to.deep.equal([0, 2]);
  });
});
