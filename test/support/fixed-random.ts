// Preloaded into a spawned service (NODE_OPTIONS=--import=<this file>) so that its retry jitter
// is at the top of its range: a retry then waits the whole backoff, which the test relies on.
Math.random = (): number => 0.999;
