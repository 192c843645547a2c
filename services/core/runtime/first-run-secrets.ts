import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SealingKey } from '../crypto/secret-box.ts';

/**
 * All-in-one mode without API_KEYS / CREDENTIALS_KEYS: a random secret is made once and kept in
 * the data directory (mode 0600), so the service never runs open and never has a default key.
 */
function readOrCreate(
  dataDir: string,
  name: string,
  make: () => string,
): { value: string; path: string; created: boolean } {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, name);
  if (existsSync(path)) return { value: readFileSync(path, 'utf8').trim(), path, created: false };
  const value = make();
  writeFileSync(path, value + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return { value, path, created: true };
}

export function firstRunApiKey(dataDir: string): {
  apiKeys: Map<string, string>;
  path: string;
  created: boolean;
} {
  const { value, path, created } = readOrCreate(dataDir, 'api-key', () =>
    randomBytes(24).toString('base64url'),
  );
  return { apiKeys: new Map([[value, 'local']]), path, created };
}

export function firstRunSealingKey(dataDir: string): SealingKey {
  const { value } = readOrCreate(dataDir, 'credentials-key', () =>
    randomBytes(32).toString('base64'),
  );
  return { id: 'local', key: Buffer.from(value, 'base64') };
}

/**
 * All-in-one mode without WEBHOOK_SECRETS: one Standard Webhooks secret (`whsec_` + base64 of 32
 * random bytes) made once per data directory, used to sign every organisation's callbacks.
 */
export function firstRunWebhookSecret(dataDir: string): {
  secret: string;
  path: string;
  created: boolean;
} {
  const { value, path, created } = readOrCreate(
    dataDir,
    'webhook-secret',
    () => `whsec_${randomBytes(32).toString('base64')}`,
  );
  return { secret: value, path, created };
}
