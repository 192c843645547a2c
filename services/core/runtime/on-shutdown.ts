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

/**
 * An exception or rejection nobody handled leaves the process in an unknown state: log it with
 * its stack and cause, then exit 1. Nothing is lost by not finishing: the bus redelivers every
 * record not yet committed, and ffmpeg children die with the process (pdeathsig).
 */
export function exitOnFatalError(log: Logger): void {
  const fatal =
    (msg: string) =>
    (error: unknown): void => {
      log.error(msg, { error });
      process.exit(1);
    };
  process.on('uncaughtException', fatal('process.uncaught_exception'));
  process.on('unhandledRejection', fatal('process.unhandled_rejection'));
}
