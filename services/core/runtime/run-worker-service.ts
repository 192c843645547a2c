import type { Subscription } from '../bus/event-bus.ts';
import { createRuntime, type Runtime } from './create-runtime.ts';
import { requireKafka, requireSealingKeys, runService } from './run-service.ts';
import { serveOps } from './serve-ops.ts';

/**
 * The main.ts of a worker run on its own: Kafka required, credentials keys when it opens
 * sealed secrets, /healthz /readyz /metrics on METRICS_PORT, and on SIGTERM /readyz 503 at once,
 * then the subscription closed within SHUTDOWN_GRACE_MS before the bus.
 */
export function runWorkerService(
  service: string,
  options: { opensSecrets: boolean },
  start: (rt: Runtime) => Promise<Subscription>,
): Promise<void> {
  return runService(service, async (config, log, tracing) => {
    requireKafka(config, `the ${service}`);
    const rt = createRuntime(config, {
      service,
      sealingKeys: options.opensSecrets ? requireSealingKeys(config) : [],
      log,
      tracing,
    });
    const subscription = await start(rt);
    const ops = await serveOps({
      host: config.host,
      port: config.metricsPort,
      registry: rt.metrics.registry,
      isReady: () => rt.bus.isReady(),
      isDraining: () => rt.drain.draining,
    });
    const address = ops.address();
    log.info(`${service}.started`, {
      metricsPort: typeof address === 'object' && address ? address.port : config.metricsPort,
    });
    return async () => {
      rt.drain.begin();
      await subscription.close(config.shutdownGraceMs);
      ops.close();
      await rt.bus.close();
    };
  });
}
