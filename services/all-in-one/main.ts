import { ConfigError, loadConfig } from '../core/config.ts';
import { createLogger } from '../core/observability/logger.ts';
import { onShutdown } from '../core/runtime/on-shutdown.ts';
import { startAllInOne } from './start-all-in-one.ts';

try {
  const config = loadConfig(process.env);
  if (config.kafkaBrokers.length > 0) throw new ConfigError('KAFKA_BROKERS is set: run the services separately (npm run start:ingress, ...) or unset it for all-in-one mode');
  const log = createLogger({ level: config.logLevel, base: { service: 'all-in-one' } });
  const app = await startAllInOne(config, { log });
  onShutdown(log, () => app.close());
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`configuration error: ${error.message}\n`);
  process.exit(2);
}
