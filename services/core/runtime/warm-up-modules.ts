import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The modules the services load, found by reading their source: what each service's `main.ts`
 * imports (main.ts itself starts the service, so it is never imported here), and every module
 * the code loads lazily through a dynamic import of a string literal (a cloud store, the Kafka
 * bus, the remuxer, the tracing exporters). The image imports them all once at build time to
 * fill Node's compile cache (Dockerfile); a list kept by hand went stale when a module moved.
 * Files come back as file URLs, packages by name (they resolve from the working directory's
 * node_modules). No module does work when imported, so importing all of them is safe.
 *
 * Throws when a dynamic import's argument is not a string literal: such a module could not be
 * found from the source, and the cache would silently miss it.
 */
export async function warmUpModules(servicesDir: string): Promise<string[]> {
  const root = resolve(servicesDir);
  const found = new Set<string>();
  for (const file of await sourceFiles(root)) {
    const text = await readFile(file, 'utf8');
    const specifiers = file.endsWith('/main.ts')
      ? [...staticImports(text), ...dynamicImports(text, file)]
      : dynamicImports(text, file);
    for (const specifier of specifiers)
      if (!specifier.startsWith('node:')) found.add(toModule(specifier, file));
  }
  return [...found].sort();
}

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

/** The lines that hold code: a comment may quote an import without making one. */
function codeLines(text: string): string[] {
  return text.split('\n').filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line));
}

function staticImports(text: string): string[] {
  const code = codeLines(text).join('\n');
  const imports = code.matchAll(/^import\s+(?!type\s)(?:[^;'"]*?\sfrom\s+)?(['"])([^'"]+)\1/gm);
  return [...imports].map((m) => m[2] ?? '').filter(Boolean);
}

function dynamicImports(text: string, file: string): string[] {
  const found: string[] = [];
  for (const line of codeLines(text)) {
    const calls = line.match(/\bimport\(/g)?.length ?? 0;
    const literals = [...line.matchAll(/\bimport\(\s*(['"])([^'"]+)\1\s*\)/g)].map((m) => m[2]);
    if (literals.length !== calls)
      throw new Error(`${file}: a dynamic import whose module is not a string literal: ${line}`);
    for (const specifier of literals) if (specifier) found.push(specifier);
  }
  return found;
}

function toModule(specifier: string, file: string): string {
  if (!specifier.startsWith('.')) return specifier;
  return pathToFileURL(resolve(dirname(file), specifier)).href;
}
