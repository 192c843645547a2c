import type { Logger } from '../observability/logger.ts';

/** How long after a stop signal the same signal again is taken as a copy, not as insistence, ms. */
const DUPLICATE_SIGNAL_MS = 1000;

/**
 * SIGTERM and SIGINT take the same path: stop intake, finish or hand back in-flight work within
 * the grace period, close clients, exit. Installed before the service starts, so a signal during
 * start-up is not the default abrupt exit: the stop runs as soon as the start is done.
 *
 * A second signal exits at once, unless it comes within a second of the first: `npm start`
 * forwards the signal it gets to the service, which a terminal's Ctrl-C or a process-group kill
 * has already reached, so one request to stop arrives twice.
 */
export function onShutdown(log: Logger): { started(stop: () => Promise<void>): void } {
  let requestedAt: number | undefined;
  let stopService: (() => Promise<void>) | undefined;
  const runStop = (stop: () => Promise<void>): void => {
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error('service.stop_failed', { error });
        process.exit(1);
      },
    );
  };
  const handler = (signal: NodeJS.Signals): void => {
    if (requestedAt !== undefined) {
      if (Date.now() - requestedAt < DUPLICATE_SIGNAL_MS) return;
      log.warn('service.stop_forced', { signal });
      process.exit(1);
    }
    requestedAt = Date.now();
    log.info('service.stopping', { signal });
    if (stopService) runStop(stopService);
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return {
    started(stop) {
      stopService = stop;
      if (requestedAt !== undefined) runStop(stop);
    },
  };
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
