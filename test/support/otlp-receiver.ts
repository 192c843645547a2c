import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP JSON export carries it, with its resource's service.name. */
export interface ReceivedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  kind: number;
  attributes: Record<string, unknown>;
  statusCode: number;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        kind?: number;
        attributes?: KeyValue[];
        status?: { code?: number };
      }[];
    }[];
  }[];
}

/**
 * An OTLP/HTTP traces receiver (POST /v1/traces), as a collector's: JSON exports are decoded
 * into spans; protobuf exports are kept as raw bodies (a test can look for a trace id's bytes).
 */
export interface OtlpReceiver {
  /** Base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** The JSON exports as received, for what the decoded spans leave out. */
  jsonBodies: string[];
  protobufBodies: Buffer[];
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

function plain(attributes: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of attributes ?? [])
    out[key] = value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue;
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const protobufBodies: Buffer[] = [];
  const jsonBodies: string[] = [];
  const waiters = new Set<() => void>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      const body = Buffer.concat(chunks);
      if (String(req.headers['content-type']).startsWith('application/x-protobuf')) {
        protobufBodies.push(body);
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else {
        jsonBodies.push(body.toString('utf8'));
        const request = JSON.parse(body.toString('utf8')) as ExportRequest;
        for (const rs of request.resourceSpans ?? []) {
          const service = String(plain(rs.resource?.attributes)['service.name']);
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              spans.push({
                service,
                name: s.name,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                kind: s.kind ?? 0,
                attributes: plain(s.attributes),
                statusCode: s.status?.code ?? 0,
              });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    jsonBodies,
    protobufBodies,
    waitFor: (predicate, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          if (!predicate(spans)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `spans not received in time; got: ${spans.map((s) => `${s.service}/${s.name}`).join(', ')}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
