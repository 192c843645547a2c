import { createRuntime } from '../core/runtime/create-runtime.ts';
import { requireKafka, runService } from '../core/runtime/run-service.ts';
import { serveOps } from '../core/runtime/serve-ops.ts';
import { startNotifierService } from './start-notifier.ts';

await runService('notifier', async (config, log) => {
  requireKafka(config, 'the notifier');
  const rt = createRuntime(config, { service: 'notifier', sealingKeys: [], log });
  const subscription = await startNotifierService(rt);
  const ops = await serveOps({ host: config.host, port: config.metricsPort, registry: rt.metrics.registry, isReady: () => rt.bus.isReady() });
  const address = ops.address();
  log.info('notifier.started', { metricsPort: typeof address === 'object' && address ? address.port : config.metricsPort });
  return async () => {
    await subscription.close(config.shutdownGraceMs);
    ops.close();
    await rt.bus.close();
  };
});
