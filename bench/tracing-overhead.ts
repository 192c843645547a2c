// Side-by-side benchmark, one run: what tracing costs on the submission path. Two ingress apps
// in this process (embedded bus in memory), interleaved rounds of sequential POST /transcode:
// tracing off (the default: no-op tracer) and on (SDK, batch export over OTLP/HTTP JSON to a
// local receiver), each with and without a caller traceparent. Also the no-op tracing calls
// of one submission alone (extract, three spans, inject), timed in a loop.
// Usage: node bench/tracing-overhead.ts [rounds=5] [requests=1000]
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../services/core/config.ts';
import { silentLogger } from '../services/core/observability/logger.ts';
import {
  extractTraceContext,
  inSpan,
  startTracing,
  tracingOff,
  withTraceHeaders,
  type Tracer,
} from '../services/core/observability/tracing.ts';
import { makeIngress, validTranscode } from '../test/ingress/ingress-fixture.ts';
import { startOtlpReceiver } from '../test/support/otlp-receiver.ts';
import { median } from './stats.ts';

const rounds = Number(process.argv[2] ?? 5);
const requests = Number(process.argv[3] ?? 1000);
const PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

async function serve(tracer: Tracer): Promise<{ server: Server; url: string }> {
  const { server: handler } = await makeIngress({ tracer });
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/transcode` };
}

/** Microseconds per request, `requests` sequential submissions. */
async function round(url: string, traced: boolean): Promise<number> {
  const body = JSON.stringify(validTranscode);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (traced) headers['traceparent'] = PARENT;
  const started = performance.now();
  for (let i = 0; i < requests; i++) {
    const res = await fetch(url, { method: 'POST', headers, body });
    if (res.status !== 200) throw new Error(`status ${res.status}`);
    await res.arrayBuffer();
  }
  return ((performance.now() - started) * 1000) / requests;
}

const otlp = await startOtlpReceiver();
const tracing = await startTracing(
  loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })
    .traceExport,
  'bench',
  silentLogger,
);
const off = await serve(tracingOff.tracer);
const on = await serve(tracing.tracer);
const cases = {
  'off, no traceparent': () => round(off.url, false),
  'off, traceparent': () => round(off.url, true),
  'on, no traceparent': () => round(on.url, false),
  'on, traceparent': () => round(on.url, true),
};
const times: Record<string, number[]> = {};
await round(off.url, false); // warm-up
await round(on.url, false);
for (let r = 0; r < rounds; r++)
  for (const [name, run] of Object.entries(cases)) (times[name] ??= []).push(await run());

// The no-op path of one submission alone: what every request pays when tracing is off.
const n = 200_000;
const record = { topic: 't', key: 'k', value: Buffer.alloc(0), headers: {} };
const started = performance.now();
for (let i = 0; i < n; i++) {
  const parent = extractTraceContext(i % 2 ? { traceparent: PARENT } : {});
  await inSpan(tracingOff.tracer, 'POST /transcode', parent, async (ctx) => {
    await inSpan(tracingOff.tracer, 'validate', ctx, async () => undefined);
    await inSpan(tracingOff.tracer, 'publish', ctx, async (p) => withTraceHeaders(record, p));
  });
}
const noopNs = ((performance.now() - started) * 1e6) / n;

const base = median(times['off, no traceparent'] ?? []);
console.log(`${rounds} rounds × ${requests} sequential POST /transcode, median µs/request:`);
for (const [name, xs] of Object.entries(times))
  console.log(
    `  ${name.padEnd(22)} ${median(xs).toFixed(0).padStart(6)} µs  (×${(median(xs) / base).toFixed(3)} of off)`,
  );
console.log(
  `no-op tracing calls of one submission: ${noopNs.toFixed(0)} ns (${((noopNs / 1000 / base) * 100).toFixed(2)} % of a request)`,
);
console.log(`spans exported while on: ${otlp.spans.length} (before the final flush)`);
await tracing.shutdown();
off.server.close();
on.server.close();
await otlp.close();
