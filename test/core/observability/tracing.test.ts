import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../../../services/core/config.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';
import {
  extractTraceContext,
  inSpan,
  startTracing,
  traceHeaders,
  tracingOff,
  withTraceHeaders,
} from '../../../services/core/observability/tracing.ts';
import { startOtlpReceiver } from '../../support/otlp-receiver.ts';

const PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('tracing', () => {
  describesConfigurationStandardOTELVariables();

  describesTraceContextHeaders();

  describesExportsOverOTLPHTTP();
});

function describesConfigurationStandardOTELVariables(): void {
  describe('configuration from the standard OTEL_* variables', () => {
    it('is off by default, and with OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true', () => {
      expect(loadConfig({}).traceExport).to.equal(undefined);
      const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
      expect(loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).traceExport).to.equal(
        undefined,
      );
      expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).traceExport).to.equal(
        undefined,
      );
    });

    it('is on with an endpoint (…/v1/traces added) or OTEL_TRACES_EXPORTER=otlp (localhost default)', () => {
      expect(
        loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).traceExport,
      ).to.deep.include({ url: 'http://collector:4318/v1/traces', protocol: 'http/protobuf' });
      expect(
        loadConfig({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c.example.com/custom',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_SERVICE_NAME: 'edge-ingress',
          OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=media%20ops',
        }).traceExport,
      ).to.deep.equal({
        url: 'https://c.example.com/custom',
        protocol: 'http/json',
        serviceName: 'edge-ingress',
        resourceAttributes: { 'deployment.environment': 'prod', team: 'media ops' },
        sampler: { name: 'parentbased_always_on', ratio: 1 },
      });
      expect(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).traceExport?.url).to.equal(
        'http://localhost:4318/v1/traces',
      );
    });

    it('refuses what it cannot do with a clear message', () => {
      const bad: Record<string, string>[] = [
        { OTEL_TRACES_EXPORTER: 'zipkin' },
        { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
        { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' },
        {
          OTEL_TRACES_EXPORTER: 'otlp',
          OTEL_TRACES_SAMPLER: 'traceidratio',
          OTEL_TRACES_SAMPLER_ARG: '2',
        },
        { OTEL_TRACES_EXPORTER: 'otlp', OTEL_RESOURCE_ATTRIBUTES: 'novalue' },
      ];
      for (const env of bad)
        expect(() => loadConfig(env), JSON.stringify(env)).to.throw(ConfigError);
    });
  });
}

function describesTraceContextHeaders(): void {
  describe('trace context in headers', () => {
    it('reads traceparent and tracestate, or CloudEvents binary-mode ce_ headers, and writes them back', () => {
      const context = extractTraceContext({ traceparent: PARENT, tracestate: 'a=1' });
      expect(traceHeaders(context)).to.deep.equal({ traceparent: PARENT, tracestate: 'a=1' });
      expect(traceHeaders(extractTraceContext({ ce_traceparent: PARENT }))).to.deep.equal({
        traceparent: PARENT,
      });
    });

    it('ignores a missing or invalid traceparent and leaves a record as it was', () => {
      for (const headers of [
        {},
        { traceparent: '00-00000000000000000000000000000000-b7ad6b7169203331-01' },
        { traceparent: '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01' },
        { traceparent: 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
        { traceparent: `${PARENT}-extra` },
        { traceparent: PARENT.toUpperCase() },
        { traceparent: 'garbage' },
      ]) {
        const record = { topic: 't', key: 'k', value: Buffer.alloc(0), headers: { a: 'b' } };
        expect(withTraceHeaders(record, extractTraceContext(headers))).to.equal(record);
      }
    });

    it('follows W3C trace context: later versions may add fields, header lists, bad tracestate members dropped', () => {
      const later = `01-${PARENT.slice(3)}-more`;
      expect(traceHeaders(extractTraceContext({ traceparent: later }))).to.deep.equal({
        traceparent: PARENT,
      });
      expect(
        traceHeaders(
          extractTraceContext({ traceparent: [PARENT, 'x'], tracestate: ['a=1', 'b=2'] }),
        ),
      ).to.deep.equal({ traceparent: PARENT, tracestate: 'a=1,b=2' });
      expect(
        traceHeaders(extractTraceContext({ traceparent: PARENT, tracestate: 'a=1,Bad Key=2' })),
      ).to.deep.equal({ traceparent: PARENT, tracestate: 'a=1' });
      const unsampled = PARENT.replace(/-01$/, '-00');
      expect(traceHeaders(extractTraceContext({ traceparent: unsampled }))).to.deep.equal({
        traceparent: unsampled,
      });
    });

    it('off: a span of the no-op tracer passes its parent context on unchanged', async () => {
      const parent = extractTraceContext({ traceparent: PARENT });
      const inner = await inSpan(tracingOff.tracer, 'work', parent, async (context) =>
        traceHeaders(context),
      );
      expect(inner).to.deep.equal({ traceparent: PARENT });
    });
  });
}

function describesExportsOverOTLPHTTP(): void {
  it('exports over OTLP/HTTP protobuf (the default protocol) to a receiver, once shut down', async () => {
    const otlp = await startOtlpReceiver();
    try {
      const config = loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_SERVICE_NAME: 'unit-test-service',
      });
      const tracing = await startTracing(config.traceExport, 'x', silentLogger);
      const traceId = randomBytes(16);
      const parent = extractTraceContext({
        traceparent: `00-${traceId.toString('hex')}-${randomBytes(8).toString('hex')}-01`,
      });
      await inSpan(tracing.tracer, 'unit span', parent, async () => undefined);
      await tracing.shutdown();
      const body = Buffer.concat(otlp.protobufBodies);
      expect(body.includes(traceId), 'trace id bytes in the export').to.equal(true);
      expect(body.includes(Buffer.from('unit span'))).to.equal(true);
      expect(body.includes(Buffer.from('unit-test-service'))).to.equal(true);
    } finally {
      await otlp.close();
    }
  });

  it('a failed span is marked as an error with the error code, never the message', async () => {
    const otlp = await startOtlpReceiver();
    try {
      const config = loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      });
      const tracing = await startTracing(config.traceExport, 'unit', silentLogger);
      const failure = Object.assign(new Error('GET https://h.example.com/?sig=secret failed'), {
        code: 'input_unreachable',
      });
      await inSpan(tracing.tracer, 'download', extractTraceContext({}), () =>
        Promise.reject(failure),
      ).catch(() => undefined);
      await tracing.shutdown();
      expect(otlp.spans.map((s) => [s.service, s.name, s.statusCode])).to.deep.equal([
        ['media-unit', 'download', 2],
      ]);
      expect(otlp.jsonBodies.join('')).to.contain('input_unreachable').and.not.contain('secret');
    } finally {
      await otlp.close();
    }
  });
}
