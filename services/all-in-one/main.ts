import { ConfigError } from '../core/config.ts';
import { runService } from '../core/runtime/run-service.ts';
import { startAllInOne } from './start-all-in-one.ts';

await runService('all-in-one', async (config, log, tracing) => {
  if (config.kafkaBrokers.length > 0)
    throw new ConfigError(
      'KAFKA_BROKERS is set: run the services separately (npm run start:ingress, ...) or unset it for all-in-one mode',
    );
  const app = await startAllInOne(config, { log, tracing });
  return () => app.close();
});
