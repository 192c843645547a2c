import { Registry } from 'prom-client';
import { createEmbeddedBus } from '../../services/core/bus/embedded-bus.ts';
import { BusUnavailableError, type EventBus } from '../../services/core/bus/event-bus.ts';
import { loadContracts, type Contracts } from '../../services/core/contracts/load-contracts.ts';
import { createEventCodec } from '../../services/core/events/event-codec.ts';
import { createAddressPolicy } from '../../services/core/net/address-policy.ts';
import { createJobStatusView } from '../../services/core/status/job-status-view.ts';
import { silentLogger, type Logger } from '../../services/core/observability/logger.ts';
import { createMetrics } from '../../services/core/observability/metrics.ts';
import { tracingOff, type Tracer } from '../../services/core/observability/tracing.ts';
import { systemClock, type Clock } from '../../services/core/time.ts';
import { createAuthenticator } from '../../services/ingress/authenticate.ts';
import { createIngressApp } from '../../services/ingress/create-ingress-app.ts';
import type { IngressLimits } from '../../services/ingress/rate-limit.ts';
import type { WatermarkRoutesOptions } from '../../services/ingress/watermark-routes.ts';

export const KEY_A = 'key-for-org-a-0123456789';
export const KEY_B = 'key-for-org-b-0123456789';
export const contracts = loadContracts();
export const sealingKey = { id: 'test', key: Buffer.alloc(32, 7) };

/** A bus whose publish always fails, as a broker that is down. */
export function downBus(): EventBus {
  return {
    publish: async () => {
      throw new BusUnavailableError('down');
    },
    subscribe: async () => ({ close: async () => {} }),
    tail: async () => ({ close: async () => {} }),
    isReady: async () => false,
    close: async () => {},
  };
}

export async function makeIngress(
  options: {
    bus?: EventBus;
    allowPrivateNetworks?: boolean;
    maxBodyBytes?: number;
    maxPixels?: number;
    log?: Logger;
    /** Jobs the status view keeps (default 100). */
    maxJobs?: number;
    tracer?: Tracer;
    limits?: Partial<IngressLimits>;
    clock?: Clock;
    watermarks?: Partial<WatermarkRoutesOptions>;
    isDraining?: () => boolean;
    /** The compiled schemas (default: those of schemas/). */
    contracts?: Contracts;
  } = {},
) {
  const bus = options.bus ?? createEmbeddedBus({ path: ':memory:' });
  const codec = createEventCodec(options.contracts ?? contracts, 'test');
  const statusView = createJobStatusView(
    { bus, codec, ...(options.log ? { log: options.log } : {}) },
    { maxJobs: options.maxJobs ?? 100 },
  );
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const app = createIngressApp({
    bus,
    codec,
    contracts: options.contracts ?? contracts,
    authenticate: createAuthenticator(
      new Map([
        [KEY_A, 'org-a'],
        [KEY_B, 'org-b'],
      ]),
    ),
    statusView,
    metrics,
    log: options.log ?? silentLogger,
    tracer: options.tracer ?? tracingOff.tracer,
    clock: options.clock ?? systemClock,
    sealingKey,
    maxBodyBytes: options.maxBodyBytes ?? 64 * 1024,
    maxPixels: options.maxPixels ?? 7680 * 4320,
    limits: { ratePerSecond: 0, rateBurst: 1, maxActiveJobsPerOrg: 0, ...options.limits },
    ...(options.isDraining ? { isDraining: options.isDraining } : {}),
    addressPolicy: createAddressPolicy({
      allowPrivateNetworks: options.allowPrivateNetworks ?? false,
    }),
    watermarks: {
      library: undefined,
      maxBytes: 64 * 1024,
      maxWidth: 1024,
      maxHeight: 1024,
      ...options.watermarks,
    },
  });
  return { app, bus, codec, metrics, statusView, server: app.callback() };
}

export const validTranscode = {
  apiKey: KEY_A,
  inputUrl: 'https://media.example.com/in.mp4',
  outputUrl: 'https://media.example.com/out.mp4',
  encoder: 'h264',
  container: 'mp4',
  bitrateKbps: '1000',
};

export const validSummary = {
  apiKey: KEY_A,
  inputUrl: 'https://media.example.com/in.mp4',
  outputUrl: 'https://media.example.com/out.gif',
};

export const awsCreds = {
  region: 'us-east-1',
  accessKeyId: 'AKIAEXAMPLE',
  secretAccessKey: 'very-secret-value',
};
export const azureCreds = { accountName: 'account1', accountKey: 'azure-secret-key==' };
export const gcpCreds = {
  type: 'service_account',
  project_id: 'p1',
  private_key: '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n',
  client_email: 'svc@p1.iam.gserviceaccount.com',
  private_key_id: 'abc',
};
