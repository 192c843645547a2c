import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  CORPUS_RECIPES,
  SHORT_CORPUS_RECIPES,
  type ClipKind,
  type ClipRecipe,
  type CorpusSources,
} from './quality-corpus-recipes.ts';

export type { ClipKind } from './quality-corpus-recipes.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

/** A clip of the quality corpus as declared: what it shows, its length (s) and frame size. */
export interface CorpusEntry {
  name: string;
  kind: ClipKind;
  description: string;
  seconds: number;
  width: number;
  height: number;
}

/** A clip made (or found in the cache): its file, H.264 yuv420p at 25 fps, no audio track made. */
export interface CorpusClip extends CorpusEntry {
  path: string;
}

const entry = (r: ClipRecipe): CorpusEntry => ({
  name: r.name,
  kind: r.kind,
  description: r.description,
  seconds: r.seconds,
  width: r.width,
  height: r.height,
});

/** The full corpus: 720p natural clips from 5 s to a minute, and synthetic ones beside them. */
export const CORPUS: readonly CorpusEntry[] = CORPUS_RECIPES.map(entry);
/** Short variants (5 s, at most 640x360) for CI tests. */
export const SHORT_CORPUS: readonly CorpusEntry[] = SHORT_CORPUS_RECIPES.map(entry);

const RECIPES = new Map([...CORPUS_RECIPES, ...SHORT_CORPUS_RECIPES].map((r) => [r.name, r]));
const ffmpegPath = (): string => process.env['TEST_FFMPEG'] ?? 'ffmpeg';
/** Where test fixtures that take long to make are kept between runs. */
export const cacheDir = (): string =>
  process.env['MEDIA_TEST_CACHE'] ?? join(homedir(), '.cache/media-service-test');

// Near-lossless, so the corpus adds little distortion of its own; bit-exact and one fixed thread
// count, so the same recipe gives the same bytes.
const ENCODE = [
  ...['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '10', '-pix_fmt', 'yuv420p'],
  ...['-threads', '2', '-an', '-map_metadata', '-1', '-fflags', '+bitexact'],
  ...['-flags:v', '+bitexact', '-movflags', '+faststart'],
];

let sourcesOnce: Promise<{ sources: CorpusSources; stamp: string }> | undefined;

/** The pinned natural sources: TEST_CORPUS_SOURCES (start-all.sh), else corpus.sh installs them. */
function corpusSources(): Promise<{ sources: CorpusSources; stamp: string }> {
  sourcesOnce ??= (async () => {
    let dir = process.env['TEST_CORPUS_SOURCES'];
    if (!dir) {
      await run('bash', [join(root, 'scripts/test-services/corpus.sh'), 'install']);
      dir = join(cacheDir(), 'corpus-sources');
    }
    // The pinned package's copyright file: text that changes only with the pin (a file of this
    // repository would change the clip with every edit).
    const codeFile = join(dir, 'photos', 'copyright');
    const [stamp, version] = await Promise.all([
      readFile(join(dir, 'sources.sha256'), 'utf8'),
      run(ffmpegPath(), ['-hide_banner', '-version']).then((r) => r.stdout.split('\n')[0] ?? ''),
    ]);
    const sources: CorpusSources = {
      clips: join(dir, 'clips'),
      photos: join(dir, 'photos'),
      monoFont: '/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf',
      codeFile,
    };
    // The ffmpeg build is part of what a clip is made from (the sources are in the stamp).
    return { sources, stamp: `${stamp.trim()} ${version}` };
  })();
  return sourcesOnce;
}

const made = new Map<string, Promise<CorpusClip>>();

/**
 * The named clip, made on first use and cached under `$MEDIA_TEST_CACHE/quality-corpus`, keyed
 * by a hash of its recipe, its sources and the ffmpeg version (a changed recipe makes it anew).
 */
export function corpusClip(name: string): Promise<CorpusClip> {
  const recipe = RECIPES.get(name);
  if (!recipe) return Promise.reject(new Error(`no corpus clip named ${name}`));
  let clip = made.get(name);
  if (!clip) {
    clip = makeClip(recipe);
    made.set(name, clip);
    // A failure is not cached: the next call tries again.
    clip.catch(() => made.delete(name));
  }
  return clip;
}

async function makeClip(recipe: ClipRecipe): Promise<CorpusClip> {
  const { sources, stamp } = await corpusSources();
  if (recipe.shipped) return { ...entry(recipe), path: join(sources.clips, recipe.shipped) };
  const used = await Promise.all((recipe.uses ?? []).map((n) => corpusClip(n)));
  const built = recipe.build?.(sources) ?? { inputs: [], graph: '[0:v]null[v]' };
  const inputs = [...used.flatMap((c) => ['-i', c.path]), ...built.inputs];
  const args = [
    ...['-hide_banner', '-loglevel', 'error', ...inputs],
    ...['-filter_complex', built.graph, '-map', '[v]', '-r', '25', '-t', String(recipe.seconds)],
    ...ENCODE,
  ];
  const key = createHash('sha256')
    .update(JSON.stringify({ args, stamp }))
    .digest('hex')
    .slice(0, 16);
  const dir = join(cacheDir(), 'quality-corpus');
  const path = join(dir, `${recipe.name}-${key}.mp4`);
  if (!existsSync(path)) {
    await mkdir(dir, { recursive: true });
    // Made beside and renamed: a concurrent maker or an interrupted run leaves no half file.
    const partial = `${path}.${process.pid}.partial.mp4`;
    try {
      await run(ffmpegPath(), [...args, '-y', partial], { maxBuffer: 16 * 1024 * 1024 });
      await rename(partial, path);
    } finally {
      await rm(partial, { force: true });
    }
  }
  return { ...entry(recipe), path };
}
