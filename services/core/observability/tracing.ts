import {
  createTraceState,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanKind,
  type Tracer,
} from '@opentelemetry/api';
import type { Logger } from './logger.ts';

export { SpanKind, type Context as TraceContext, type Span, type Tracer } from '@opentelemetry/api';

/**
 * W3C trace context (`traceparent`, `tracestate`) goes from the submission to the callback:
 * HTTP header → bus record headers → the workers' and the notifier's records → the callback
 * request. Contexts are passed by hand (no global context manager, no patched modules), so a
 * span's parent is always the one the code names.
 *
 * Off by default: the tracer is then OpenTelemetry's no-op one, whose spans only carry their
 * parent's context along. A caller's traceparent still reaches the callback unchanged, and a
 * request without one costs a header lookup. The SDK and its exporter are loaded only when an
 * exporter is configured.
 */
export interface Tracing {
  tracer: Tracer;
  /** Exports the spans still buffered, then stops; the tracer records nothing after it. */
  shutdown(): Promise<void>;
}

/** Where spans are sent: OTLP over HTTP (the standard OTEL_* variables; see config.ts). */
export interface TraceExportSettings {
  /** Full URL of the traces endpoint, e.g. http://collector:4318/v1/traces. */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  /** `service.name` of the spans (OTEL_SERVICE_NAME, default `media-<service>`). */
  serviceName: string | undefined;
  /** Other resource attributes (OTEL_RESOURCE_ATTRIBUTES). */
  resourceAttributes: Readonly<Record<string, string>>;
  sampler: { name: SamplerName; ratio: number };
}

export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

const TRACER_NAME = 'media-service';

export const tracingOff: Tracing = {
  tracer: trace.getTracerProvider().getTracer(TRACER_NAME),
  shutdown: async () => undefined,
};

/** The tracer of a service: the SDK with an OTLP exporter when settings are given, else no-op. */
export async function startTracing(
  settings: TraceExportSettings | undefined,
  service: string,
  log: Logger,
): Promise<Tracing> {
  if (!settings) return tracingOff;
  const [sdk, resources, exporterModule] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    settings.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const root = {
    always_on: () => new sdk.AlwaysOnSampler(),
    always_off: () => new sdk.AlwaysOffSampler(),
    traceidratio: () => new sdk.TraceIdRatioBasedSampler(settings.sampler.ratio),
  };
  const { name } = settings.sampler;
  const sampler = name.startsWith('parentbased_')
    ? new sdk.ParentBasedSampler({
        root: root[name.slice('parentbased_'.length) as keyof typeof root](),
      })
    : root[name as keyof typeof root]();
  const provider = new sdk.TracerProvider({
    sampler,
    resource: resources.resourceFromAttributes({
      ...settings.resourceAttributes,
      'service.name': settings.serviceName ?? `media-${service}`,
    }),
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter: new exporterModule.OTLPTraceExporter({ url: settings.url }),
        scheduledDelayMillis: 1000,
      }),
    ],
  });
  log.info('tracing.started', { url: settings.url, protocol: settings.protocol, sampler: name });
  let stopped: Promise<void> | undefined;
  return {
    tracer: provider.getTracer(TRACER_NAME),
    shutdown: () =>
      (stopped ??= provider
        .shutdown()
        .catch((error: unknown) => log.warn('tracing.shutdown_failed', { error }))),
  };
}

// W3C trace context by hand rather than @opentelemetry/core's W3CTraceContextPropagator: that
// package has no subpath export, and its index loads the semantic conventions, 11 MiB of the
// idle process's RSS (measured), for these thirty lines. Same rules as the propagator: version
// `ff` and all-zero ids are invalid, version 00 takes exactly four fields, later versions may
// add fields; tracestate is parsed (and its invalid members dropped) by the API's TraceState.
const TRACEPARENT =
  /^\s?((?!ff)[\da-f]{2})-((?![0]{32})[\da-f]{32})-((?![0]{16})[\da-f]{16})-([\da-f]{2})(-.*)?\s?$/;

type Carrier = Readonly<Record<string, string | string[] | undefined>>;

/** A header's value; CloudEvents' distributed tracing extension in Kafka binary mode names them ce_<name>. */
function header(carrier: Carrier, name: string, join: boolean): string | undefined {
  const value = carrier[name] ?? carrier[`ce_${name}`];
  return Array.isArray(value) ? (join ? value.join(',') : value[0]) : value;
}

/** The trace context named by `traceparent`/`tracestate` in headers (HTTP or bus); an invalid one is ignored. */
export function extractTraceContext(headers: Carrier | undefined): Context {
  const parent = headers && header(headers, 'traceparent', false);
  const match = parent === undefined ? null : TRACEPARENT.exec(parent);
  if (!match || (match[1] === '00' && match[5] !== undefined)) return ROOT_CONTEXT;
  const state = header(headers ?? {}, 'tracestate', true);
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: match[2] ?? '',
    spanId: match[3] ?? '',
    traceFlags: parseInt(match[4] ?? '0', 16),
    isRemote: true,
    ...(state ? { traceState: createTraceState(state) } : {}),
  });
}

/** `traceparent` (and `tracestate`) of a context, empty when it holds no valid span. */
export function traceHeaders(context: Context): Record<string, string> {
  const span = trace.getSpanContext(context);
  if (!span || !isSpanContextValid(span)) return {};
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  const headers: Record<string, string> = {
    traceparent: `00-${span.traceId}-${span.spanId}-${flags}`,
  };
  const state = span.traceState?.serialize();
  if (state) headers['tracestate'] = state;
  return headers;
}

/** The trace id of a context as a log field, when it has a valid one (logs and traces then join). */
export function traceLogFields(context: Context): { traceId?: string } {
  const span = trace.getSpanContext(context);
  return span && isSpanContextValid(span) ? { traceId: span.traceId } : {};
}

/** A bus record with the trace context in its headers. */
export function withTraceHeaders<R extends { headers?: Record<string, string> }>(
  record: R,
  context: Context,
): R {
  const headers = traceHeaders(context);
  if (!headers['traceparent']) return record;
  return { ...record, headers: { ...record.headers, ...headers } };
}

/** A child span of `parent`, and the context that has it (to pass on to its own children). */
export function startChildSpan(
  tracer: Tracer,
  name: string,
  parent: Context,
  options: { kind?: SpanKind; attributes?: Attributes } = {},
): { span: Span; context: Context } {
  const span = tracer.startSpan(name, options, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/**
 * Runs `work` in a child span of `parent`: ended when it settles, marked as an error (with the
 * exception's type and message; never a stack, which names local paths) when it throws.
 */
export async function inSpan<T>(
  tracer: Tracer,
  name: string,
  parent: Context,
  work: (context: Context, span: Span) => Promise<T>,
  options: { kind?: SpanKind; attributes?: Attributes } = {},
): Promise<T> {
  const { span, context } = startChildSpan(tracer, name, parent, options);
  try {
    return await work(context, span);
  } catch (error) {
    markFailed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

export function markFailed(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  const code = (error as { code?: unknown } | null)?.code;
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: typeof code === 'string' ? code : ((error as Error | null)?.name ?? 'error'),
  });
  span.addEvent('exception', {
    'exception.type': (error as Error | null)?.name ?? typeof error,
    ...(typeof code === 'string' ? { 'error.type': code } : {}),
  });
}
