import type { Logger } from '../observability/logger.ts';

/**
 * SIGTERM and SIGINT take the same path: stop intake, finish or hand back in-flight work within
 * the grace period, close clients, exit. A second signal exits at once.
 */
export function onShutdown(log: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) process.exit(1);
    stopping = true;
    log.info('service.stopping', { signal });
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error('service.stop_failed', { error });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
