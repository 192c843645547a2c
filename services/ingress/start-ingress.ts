import { createAddressPolicy } from '../core/net/address-policy.ts';
import type { Server } from 'node:http';
import type { SealingKey } from '../core/crypto/secret-box.ts';
import { createJobStatusView } from '../core/status/job-status-view.ts';
import type { Runtime } from '../core/runtime/create-runtime.ts';
import { serveOps } from '../core/runtime/serve-ops.ts';
import { createAuthenticator } from './authenticate.ts';
import { createIngressApp } from './create-ingress-app.ts';

/** Jobs remembered for GET /jobs/:id (about 0.2 KiB each, compressed: job-status-store.ts). */
export const STATUS_VIEW_MAX_JOBS = 100_000;

export interface RunningIngress {
  server: Server;
  /** The address it listens on, e.g. http://127.0.0.1:8080 */
  url: string;
  /** Where /metrics is served, with /healthz and /readyz: METRICS_PORT, never the API port. */
  metricsUrl: string;
  close(): Promise<void>;
}

export async function startIngress(
  rt: Runtime,
  options: { apiKeys: ReadonlyMap<string, string>; sealingKey: SealingKey },
): Promise<RunningIngress> {
  const statusView = createJobStatusView(
    { bus: rt.bus, codec: rt.codec, log: rt.log },
    { maxJobs: STATUS_VIEW_MAX_JOBS },
  );
  await statusView.start();
  const waiting = (): Iterable<{ orgId: string; kind: string; count: number }> =>
    statusView.waiting().values();
  rt.metrics.waitingSources.add(waiting);
  const app = createIngressApp({
    bus: rt.bus,
    codec: rt.codec,
    contracts: rt.contracts,
    authenticate: createAuthenticator(options.apiKeys),
    statusView,
    metrics: rt.metrics,
    log: rt.log,
    tracer: rt.tracing.tracer,
    clock: rt.clock,
    sealingKey: options.sealingKey,
    maxBodyBytes: rt.config.maxBodyBytes,
    maxPixels: rt.config.maxPixels,
    limits: {
      ratePerSecond: rt.config.rateLimitPerSecond,
      rateBurst: rt.config.rateLimitBurst,
      maxActiveJobsPerOrg: rt.config.maxActiveJobsPerOrg,
    },
    watermarks: {
      library: rt.watermarks,
      maxBytes: rt.config.watermarkMaxBytes,
      maxWidth: rt.config.watermarkMaxWidth,
      maxHeight: rt.config.watermarkMaxHeight,
    },
    isDraining: () => rt.drain.draining,
    addressPolicy: createAddressPolicy({
      allowPrivateNetworks: rt.config.allowPrivateNetworks,
      allowList: rt.config.addressAllowList,
    }),
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(rt.config.port, rt.config.host, () => resolve(s));
    s.once('error', reject);
  });
  server.requestTimeout = 30_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : rt.config.port;
  const url = `http://${rt.config.host.includes(':') ? `[${rt.config.host}]` : rt.config.host}:${port}`;
  const ops = await serveOps({
    host: rt.config.host,
    port: rt.config.metricsPort,
    registry: rt.metrics.registry,
    isReady: () => rt.bus.isReady(),
    isDraining: () => rt.drain.draining,
  }).catch(async (error: unknown) => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw error;
  });
  const opsAddress = ops.address();
  const opsPort = typeof opsAddress === 'object' && opsAddress ? opsAddress.port : 0;
  const metricsUrl = `${url.slice(0, url.lastIndexOf(':'))}:${opsPort}/metrics`;
  rt.log.info('ingress.listening', { url, metricsUrl });
  return {
    server,
    url,
    metricsUrl,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      ops.close();
      rt.metrics.waitingSources.delete(waiting);
      await statusView.close();
    },
  };
}
