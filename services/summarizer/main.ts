import { createRuntime } from '../core/runtime/create-runtime.ts';
import { requireKafka, requireSealingKeys, runService } from '../core/runtime/run-service.ts';
import { serveOps } from '../core/runtime/serve-ops.ts';
import { startSummarizer } from './start-summarizer.ts';

await runService('summarizer', async (config, log) => {
  requireKafka(config, 'the summarizer');
  const rt = createRuntime(config, { service: 'summarizer', sealingKeys: requireSealingKeys(config), log });
  const subscription = await startSummarizer(rt);
  const ops = await serveOps({ host: config.host, port: config.metricsPort, registry: rt.metrics.registry, isReady: () => rt.bus.isReady() });
  const address = ops.address();
  log.info('summarizer.started', { metricsPort: typeof address === 'object' && address ? address.port : config.metricsPort });
  return async () => {
    await subscription.close(config.shutdownGraceMs);
    ops.close();
    await rt.bus.close();
  };
});
