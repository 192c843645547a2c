// Hand-written rather than a crypto library: one AES-256-GCM call of node:crypto with the job id
// as additional data is all it takes, and it keeps the sealed format (schemas/common) ours.
import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  randomFillSync,
  type KeyObject,
} from 'node:crypto';
import type { SealedSecret } from '../contracts/types.generated.ts';

/** A key for sealing credentials inside events: 32 bytes and the id events name it by. */
export interface SealingKey {
  id: string;
  key: Buffer;
}

// Made once per key: passing the raw bytes makes node:crypto build a key object at each call,
// a third of a seal's cost, paid on every submission with bucket credentials.
const keyObjects = new WeakMap<Buffer, KeyObject>();
function keyObjectOf(key: Buffer): KeyObject {
  let object = keyObjects.get(key);
  if (!object) keyObjects.set(key, (object = createSecretKey(key)));
  return object;
}

// IVs are cut from a pool of random bytes filled 4 KiB at a time: one call into the random
// source a seal took about 6 % of the ingress's time under load (bench:ingress profile). Each
// IV is 12 fresh bytes of the CSPRNG all the same, used once and copied out of the pool.
const IV_BYTES = 12;
const ivPool = Buffer.alloc(IV_BYTES * 341);
let ivOffset = ivPool.length;
function freshIv(): Buffer {
  if (ivOffset + IV_BYTES > ivPool.length) {
    randomFillSync(ivPool);
    ivOffset = 0;
  }
  const iv = Buffer.from(ivPool.subarray(ivOffset, ivOffset + IV_BYTES));
  ivPool.fill(0, ivOffset, ivOffset + IV_BYTES);
  ivOffset += IV_BYTES;
  return iv;
}

/**
 * AES-256-GCM over the JSON of a secret. The job id is bound as additional data, so a sealed
 * credential copied into another job's event does not open.
 */
export function seal(value: unknown, key: SealingKey, jobId: string): SealedSecret {
  const iv = freshIv();
  const cipher = createCipheriv('aes-256-gcm', keyObjectOf(key.key), iv);
  cipher.setAAD(Buffer.from(jobId));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return {
    alg: 'A256GCM',
    keyId: key.id,
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    ciphertext: ciphertext.toString('base64'),
  };
}

/** Opens a sealed secret with whichever configured key its `keyId` names. */
export function open(sealed: SealedSecret, keys: readonly SealingKey[], jobId: string): unknown {
  const key = keys.find((k) => k.id === sealed.keyId);
  if (!key) throw new Error(`no sealing key with id ${sealed.keyId}`);
  const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(sealed.iv, 'base64'));
  decipher.setAAD(Buffer.from(jobId));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  const plain = Buffer.concat([
    decipher.update(Buffer.from(sealed.ciphertext, 'base64')),
    decipher.final(),
  ]);
  return JSON.parse(plain.toString('utf8')) as unknown;
}
