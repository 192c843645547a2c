import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { serveClips } from '../support/clip-server.ts';
import type { TestServer } from '../support/file-server.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import { transcodeBody } from '../support/job-requests.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';

const API_KEY = 'tracing-test-key-0123456789';

async function submit(
  app: AllInOne,
  files: TestServer,
  headers: Record<string, string>,
  output: string,
): Promise<string> {
  const res = await fetch(`${app.ingress.url}/transcode`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(
      transcodeBody(files, 'input.mp4', output, {
        apiKey: API_KEY,
        width: 320,
        successUrl: `${files.url}/callbacks/ok`,
      }),
    ),
  });
  expect(res.status, await res.clone().text()).to.equal(200);
  return String(((await res.json()) as { id: string }).id);
}

async function startApp(env: Record<string, string>): Promise<{ app: AllInOne; dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'media-tracing-'));
  const app = await startTestAllInOne(dataDir, { API_KEYS: `${API_KEY}:org-trace`, ...env });
  return { app, dataDir };
}

let files: TestServer;

describe('trace context from submission to callback (all-in-one)', function () {
  this.timeout(120_000);

  before(async () => {
    files = await serveClips({ 'input.mp4': { seconds: 2, width: 320, height: 180 } });
  });
  after(async () => {
    await files?.close();
  });

  describesOTLPHTTPJSONExporter();

  describesTracingOffDefault();
});

function describesOTLPHTTPJSONExporter(): void {
  describe('with an OTLP/HTTP JSON exporter configured', () => {
    let otlp: OtlpReceiver;
    let app: AllInOne;
    let dataDir: string;
    before(async () => {
      otlp = await startOtlpReceiver();
      ({ app, dataDir } = await startApp({
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      }));
    });
    after(async () => {
      await app?.close();
      await otlp?.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('the ingress, worker and notifier spans share the caller trace, and the callback carries it', async () => {
      const traceId = randomBytes(16).toString('hex');
      const callerSpan = randomBytes(8).toString('hex');
      const id = await submit(
        app,
        files,
        { traceparent: `00-${traceId}-${callerSpan}-01`, tracestate: 'caller=abc' },
        'traced.mp4',
      );
      const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
      const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(
        String(callback.headers['traceparent']),
      );
      expect(sent?.[1]).to.equal(traceId);
      expect(callback.headers['tracestate']).to.equal('caller=abc');

      await otlp.waitFor(
        (spans) => spans.some((s) => s.traceId === traceId && s.name === 'callback delivery'),
        20_000,
      );
      const spans = otlp.spans.filter((s) => s.traceId === traceId);
      const byName = (name: string) => {
        const found = spans.find((s) => s.name === name);
        expect(found, `${name} in ${spans.map((s) => s.name).join(', ')}`).to.not.equal(undefined);
        return found!;
      };
      const request = byName('POST /transcode');
      expect(request.parentSpanId).to.equal(callerSpan);
      expect(request.service).to.equal('media-all-in-one');
      expect(byName('validate').parentSpanId).to.equal(request.spanId);
      const publish = byName('publish media.jobs.transcode.v1');
      expect(publish.parentSpanId).to.equal(request.spanId);
      const job = byName('transcode job');
      expect(job.parentSpanId).to.equal(publish.spanId);
      expect(job.attributes['media.job.id']).to.equal(id);
      for (const step of ['download', 'ffmpeg encode', 'upload'])
        expect(byName(step).parentSpanId, step).to.equal(job.spanId);
      const delivery = byName('callback delivery');
      // The callback request names the delivery span as its parent.
      expect(sent?.[2]).to.equal(delivery.spanId);
      expect(delivery.attributes['http.response.status_code']).to.equal(200);
    });

    it('a submission without traceparent starts a trace of its own, which the callback carries', async () => {
      const id = await submit(app, files, {}, 'untraced.mp4');
      const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
      const traceId = /^00-([0-9a-f]{32})-/.exec(String(callback.headers['traceparent']))?.[1];
      expect(traceId).to.be.a('string');
      await otlp.waitFor(
        (spans) => spans.some((s) => s.traceId === traceId && s.name === 'POST /transcode'),
        20_000,
      );
      const request = otlp.spans.find((s) => s.traceId === traceId && s.name === 'POST /transcode');
      expect(request?.parentSpanId).to.equal('');
    });
  });
}

function describesTracingOffDefault(): void {
  describe('with tracing off (the default)', () => {
    let app: AllInOne;
    let dataDir: string;
    before(async () => {
      ({ app, dataDir } = await startApp({}));
    });
    after(async () => {
      await app?.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('passes the caller traceparent and tracestate through to the callback unchanged', async () => {
      const traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
      const id = await submit(app, files, { traceparent, tracestate: 'k=v' }, 'passthrough.mp4');
      const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
      expect(callback.headers['traceparent']).to.equal(traceparent);
      expect(callback.headers['tracestate']).to.equal('k=v');
    });

    it('sends no traceparent when the caller sent none or an invalid one', async () => {
      const id = await submit(app, files, { traceparent: '00-zz-not-valid' }, 'invalid.mp4');
      const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
      expect(callback.headers['traceparent']).to.equal(undefined);
    });
  });
}
