import { Worker } from 'node:worker_threads';

/** How often the main thread shows that its event loop turns, ms. */
const BEAT_MS = 250;

// Plain JavaScript, run in a thread of its own: it must work while the main thread cannot.
const WATCHDOG = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const { beats, stallMs } = workerData;
let seen = Atomics.load(beats, 0);
let since = Date.now();
setInterval(() => {
  const now = Atomics.load(beats, 0);
  if (now !== seen) {
    seen = now;
    since = Date.now();
    return;
  }
  if (Date.now() - since < stallMs) return;
  try {
    writeSync(2, 'media-service: the main thread stopped turning its event loop for ' +
      (Date.now() - since) + ' ms while stopping; killing the process\\n');
  } catch {}
  process.kill(process.pid, 'SIGKILL');
}, ${BEAT_MS});
`;

/**
 * Kills the process (SIGKILL) when its main thread has not turned its event loop for `stallMs`:
 * a thread of its own watches a counter the main thread's timer moves. Started when the process
 * is told to stop, so that a stop ends even when the main thread can no longer run a timer of its
 * own: kafkajs 2.2.4 can spin it in a loop of promises that never yields (a consumer stopped while
 * it rebuilds its fetchers after a broker left: its fetch manager starts new fetchers after the
 * runner stopped, and the runner's fetch then answers at once, forever), and a write or a lock can
 * block it. The thread does not keep the process alive.
 */
export function startLoopWatchdog(stallMs: number): void {
  const beats = new Int32Array(new SharedArrayBuffer(4));
  setInterval(() => Atomics.add(beats, 0, 1), BEAT_MS).unref();
  new Worker(WATCHDOG, {
    eval: true,
    workerData: { beats, stallMs },
    // Its own small heap: it holds a counter and a timer.
    resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
  }).unref();
}
