import type { EventBus } from '../core/bus/event-bus.ts';
import type { Contracts } from '../core/contracts/load-contracts.ts';
import type { SealingKey } from '../core/crypto/secret-box.ts';
import type { EventCodec } from '../core/events/event-codec.ts';
import type { AddressPolicy } from '../core/net/address-policy.ts';
import type { Logger } from '../core/observability/logger.ts';
import type { Metrics } from '../core/observability/metrics.ts';
import type { Tracer } from '../core/observability/tracing.ts';
import type { JobStatusView } from '../core/status/job-status-view.ts';
import type { Clock } from '../core/time.ts';
import type { Authenticator } from './authenticate.ts';
import type { Idempotency } from './idempotency.ts';
import type { IngressLimits, RateLimiter } from './rate-limit.ts';
import type { WatermarkRoutesOptions } from './watermark-routes.ts';

export interface IngressDeps {
  bus: EventBus;
  codec: EventCodec;
  contracts: Contracts;
  authenticate: Authenticator;
  statusView: JobStatusView;
  metrics: Metrics;
  log: Logger;
  /** Spans of submissions; a caller's `traceparent` is their parent and travels with the job. */
  tracer: Tracer;
  clock: Clock;
  sealingKey: SealingKey;
  /** Largest body accepted, in bytes. */
  maxBodyBytes: number;
  /** Which addresses caller URLs may name (refused early here, again at connect time by workers). */
  addressPolicy: AddressPolicy;
  /** Largest output frame area, in pixels (MAX_PIXELS); an explicit width × height over it is refused. */
  maxPixels: number;
  /** The watermark library behind /watermarks and its upload limits. */
  watermarks: WatermarkRoutesOptions;
  /** Request rate per API key and active jobs per organisation. */
  limits: IngressLimits;
  /** True once the process is stopping: `/readyz` is then 503 (default: never). */
  isDraining?: () => boolean;
}

/** What the handlers are given: the deps, and what they share beyond them, built once per app. */
export interface IngressContext {
  deps: IngressDeps;
  idempotency: Idempotency;
  limitRate: RateLimiter;
}
