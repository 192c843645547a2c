import { createRuntime } from '../core/runtime/create-runtime.ts';
import { requireKafka, requireSealingKeys, runService } from '../core/runtime/run-service.ts';
import { serveOps } from '../core/runtime/serve-ops.ts';
import { startTranscoder } from './start-transcoder.ts';

await runService('transcoder', async (config, log) => {
  requireKafka(config, 'the transcoder');
  const rt = createRuntime(config, { service: 'transcoder', sealingKeys: requireSealingKeys(config), log });
  const subscription = await startTranscoder(rt);
  const ops = await serveOps({ host: config.host, port: config.metricsPort, registry: rt.metrics.registry, isReady: () => rt.bus.isReady() });
  const address = ops.address();
  log.info('transcoder.started', { metricsPort: typeof address === 'object' && address ? address.port : config.metricsPort });
  return async () => {
    await subscription.close(config.shutdownGraceMs);
    ops.close();
    await rt.bus.close();
  };
});
