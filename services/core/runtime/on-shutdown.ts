import type { Logger } from '../observability/logger.ts';
import { startLoopWatchdog } from './loop-watchdog.ts';

/** How long after a stop signal the same signal again is taken as a copy, not as insistence, ms. */
const DUPLICATE_SIGNAL_MS = 1000;

/**
 * After SHUTDOWN_GRACE_MS, what the stop may still take: the last rebalance, commits, the
 * consumer's leave and the wind-down of jobs handed back (about 45 s at most, docs/operating.md
 * "Stopping", which asks for a termination grace of SHUTDOWN_GRACE_MS + 60 s), ms.
 */
export const STOP_WIND_DOWN_MS = 55_000;

/** How long the main thread may stop turning its event loop while the process stops, ms. */
export const STOP_STALL_MS = 5000;

export interface ShutdownOptions {
  /** SHUTDOWN_GRACE_MS: the process exits at the latest this + `windDownMs` after the signal. */
  graceMs: number;
  /**
   * What the stop may take after the grace before it is cut short, ms (default
   * STOP_WIND_DOWN_MS, 55 s; no setting changes it: a test's own stop deadline is shorter).
   */
  windDownMs?: number;
}

/**
 * SIGTERM and SIGINT take the same path: stop intake, finish or hand back in-flight work within
 * the grace period, close clients, exit. Installed before the service starts, so a signal during
 * start-up is not the default abrupt exit: the stop runs as soon as the start is done.
 *
 * A second signal exits at once, unless it comes within a second of the first: `npm start`
 * forwards the signal it gets to the service, which a terminal's Ctrl-C or a process-group kill
 * has already reached, so one request to stop arrives twice.
 *
 * Whatever the stop waits for, the process ends: a stop still running `windDownMs` after the
 * grace is cut short (exit 1; the `deadlineMs` of the `service.stopping` line says when), and a
 * main thread that stops turning its event loop for STOP_STALL_MS, where no timer of its own can
 * run, is killed by a watchdog thread (loop-watchdog.ts).
 */
export function onShutdown(
  log: Logger,
  options: ShutdownOptions,
): { started(stop: () => Promise<void>): void } {
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
    const deadlineMs = options.graceMs + (options.windDownMs ?? STOP_WIND_DOWN_MS);
    log.info('service.stopping', { signal, deadlineMs });
    armStopDeadline(log, deadlineMs);
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

function armStopDeadline(log: Logger, deadlineMs: number): void {
  setTimeout(() => {
    log.error('service.stop_timed_out', { afterMs: deadlineMs });
    process.exit(1);
  }, deadlineMs).unref();
  try {
    startLoopWatchdog(STOP_STALL_MS);
  } catch (error) {
    log.warn('service.watchdog_unavailable', { error });
  }
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
