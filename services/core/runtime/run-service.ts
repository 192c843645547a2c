import { ConfigError, loadConfig, type Config } from '../config.ts';
import { createLogger, type Logger } from '../observability/logger.ts';
import { startTracing, type Tracing } from '../observability/tracing.ts';
import { exitOnFatalError, onShutdown } from './on-shutdown.ts';

/**
 * The body of every main.ts: load and check the config, start (with the tracing the config
 * asks for), stop on SIGTERM/SIGINT.
 * A configuration error ends the process with code 2 and one line on stderr.
 */
export async function runService(
  service: string,
  start: (config: Readonly<Config>, log: Logger, tracing: Tracing) => Promise<() => Promise<void>>,
): Promise<void> {
  try {
    const config = loadConfig(process.env);
    const log = createLogger({ level: config.logLevel, base: { service } });
    exitOnFatalError(log);
    const shutdown = onShutdown(log, { graceMs: config.shutdownGraceMs });
    const tracing = await startTracing(config.traceExport, service, log);
    const stop = await start(config, log, tracing);
    // Spans of the last moments are exported once the service has stopped.
    shutdown.started(() => stop().finally(() => tracing.shutdown()));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    process.exit(2);
  }
}

/** Separate services share their secrets through configuration; none is generated. */
export function requireSealingKeys(config: Readonly<Config>): NonNullable<Config['sealingKeys']> {
  if (config.sealingKeys.length === 0)
    throw new ConfigError(
      'CREDENTIALS_KEYS is required when the services run separately (every ingress and worker needs the same keys)',
    );
  return config.sealingKeys;
}

export function requireKafka(config: Readonly<Config>, service: string): void {
  if (config.kafkaBrokers.length === 0)
    throw new ConfigError(
      `KAFKA_BROKERS is required for ${service} on its own; for one process on the embedded bus run npm start`,
    );
}
