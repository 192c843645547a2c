// The anchor of a rate-control case (the encoder's own two-pass encode, measured) is a fixed
// function of the ffmpeg builds (and the libraries they load), the clip's bytes, the picture filters, the anchor's arguments
// and the code that measures it: the tests that do not compare CPU time keep its figures between
// runs, under a key made of all of these, so each run encodes and measures only the service's
// side. A change to any of them makes a new key, and the anchor is encoded again.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, realpath, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { cacheDir } from './quality-corpus.ts';

const run = promisify(execFile);

async function fileHash(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

const binaryHashes = new Map<string, Promise<string>>();
/**
 * A binary named on PATH or by path: its bytes, and the name, size and time of each shared
 * library it loads (a distribution's ffmpeg takes its encoders from libx264, libvpx… packages
 * that are upgraded apart from it). A static build loads none.
 */
async function binaryHash(command: string): Promise<string> {
  let found = binaryHashes.get(command);
  if (!found) {
    found = (async () => {
      const path = await realpath(
        command.includes('/')
          ? command
          : (await run('sh', ['-c', `command -v "$0"`, command])).stdout.trim(),
      );
      const libraries = await sharedLibraries(path);
      const stamps = await Promise.all(
        libraries.map(async (lib) => {
          const real = await realpath(lib);
          const { size, mtimeMs } = await stat(real);
          return `${real} ${size} ${mtimeMs}`;
        }),
      );
      return `${await fileHash(path)}\n${stamps.sort().join('\n')}`;
    })();
    binaryHashes.set(command, found);
  }
  return found;
}

/** The shared libraries `ldd` resolves for `path`; none for a static executable. */
async function sharedLibraries(path: string): Promise<string[]> {
  const listed = await run('ldd', [path]).then(
    ({ stdout }) => stdout,
    () => '',
  );
  return [...listed.matchAll(/=> (\/\S+)/g)].map((m) => m[1] as string);
}

/** The measuring code: this module, the anchor's and the measures'. */
const MEASURING_CODE = ['anchor-cache.ts', 'rate-control-anchor.ts', 'encode-measures.ts'];

/**
 * The key of one anchor: `binaries` (ffmpeg builds that encode and measure it), `inputs` (files
 * it reads) and `recipe` (its arguments and filters, with no scratch paths in them).
 */
export async function anchorKey(parts: {
  binaries: readonly string[];
  inputs: readonly string[];
  recipe: unknown;
}): Promise<string> {
  const hash = createHash('sha256');
  for (const b of parts.binaries) hash.update(`binary ${await binaryHash(b)}\n`);
  for (const i of parts.inputs) hash.update(`input ${await fileHash(i)}\n`);
  for (const name of MEASURING_CODE)
    hash.update(`code ${name} ${await readFile(new URL(name, import.meta.url), 'utf8')}\n`);
  hash.update(JSON.stringify(parts.recipe));
  return hash.digest('hex').slice(0, 24);
}

/** The figures kept under `key`, or `make`'s, kept for the next run. */
export async function cachedFigures<T>(key: string, make: () => Promise<T>): Promise<T> {
  const dir = join(cacheDir(), 'rate-control-anchors');
  const file = join(dir, `${key}.json`);
  const kept = await readFile(file, 'utf8').then(
    (text) => JSON.parse(text) as T,
    () => undefined,
  );
  if (kept !== undefined) return kept;
  const made = await make();
  await mkdir(dir, { recursive: true });
  // Written whole, then renamed: a run stopped halfway leaves no half file to be read.
  const partial = `${file}.${process.pid}.partial`;
  await writeFile(partial, JSON.stringify(made));
  await rename(partial, file);
  return made;
}
