import { ConfigError } from '../core/config.ts';
import { createRuntime } from '../core/runtime/create-runtime.ts';
import { requireKafka, requireSealingKeys, runService } from '../core/runtime/run-service.ts';
import { startIngress } from './start-ingress.ts';

await runService('ingress', async (config, log, tracing) => {
  requireKafka(config, 'the ingress');
  const sealingKeys = requireSealingKeys(config);
  if (config.apiKeys.size === 0)
    throw new ConfigError('API_KEYS is required when the ingress runs on its own');
  const rt = createRuntime(config, { service: 'ingress', sealingKeys, log, tracing });
  const [current] = sealingKeys;
  if (!current) throw new ConfigError('CREDENTIALS_KEYS is empty');
  const ingress = await startIngress(rt, { apiKeys: config.apiKeys, sealingKey: current });
  return async () => {
    rt.drain.begin();
    await ingress.close();
    await rt.bus.close();
  };
});
