import { randomUUID } from 'node:crypto';

// What the tests on a real broker share: fresh names per test, the broker list, a polling wait.

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));
export const newGroup = (): string => `test-group-${randomUUID()}`;
export const newPrefix = (): string => `test-${randomUUID().slice(0, 8)}.`;

/** Polls a synchronous condition every 25 ms until it holds, or fails after `ms`. */
export async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** The test broker (scripts/test-services/start-all.sh writes the env file). Never skipped: a missing broker is a failed run. */
export function brokers(): string[] {
  const value = process.env['TEST_KAFKA_BROKERS'];
  if (!value)
    throw new Error('TEST_KAFKA_BROKERS is not set: run `npm test`, which starts a broker');
  return value.split(',');
}
