// Writes the configuration table of docs/configuration.md from the declarations in services/core/config.ts, so the
// documented variables, defaults and meanings are the ones the code reads.
// `npm run generate:config-table` rewrites the table; `--check` exits 1 when it is stale.
import { readFile, writeFile } from 'node:fs/promises';
import { format, resolveConfig } from 'prettier';
import { configTable } from '../services/core/config.ts';

const pageFile = new URL('../docs/configuration.md', import.meta.url).pathname;

/** The table as prettier lays it out in docs/configuration.md. */
export async function renderedConfigTable(): Promise<string> {
  const options = (await resolveConfig(pageFile)) ?? {};
  return format(configTable(), { ...options, parser: 'markdown' });
}

/** The page's configuration table as it stands: from its `| variable` header to the last row. */
export function currentConfigTable(page: string): { start: number; end: number; table: string } {
  const start = page.search(/^\| variable +\| default +\| meaning +\|$/m);
  if (start < 0)
    throw new Error(
      'docs/configuration.md has no configuration table (| variable | default | meaning |)',
    );
  const after = page.slice(start).search(/^(?!\|)/m);
  const end = after < 0 ? page.length : start + after;
  return { start, end, table: page.slice(start, end) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const page = await readFile(pageFile, 'utf8');
  const { start, end, table } = currentConfigTable(page);
  const wanted = await renderedConfigTable();
  if (process.argv.includes('--check')) {
    if (table !== wanted) {
      process.stderr.write(
        'docs/configuration.md configuration table is stale: run npm run generate:config-table\n',
      );
      process.exit(1);
    }
  } else await writeFile(pageFile, page.slice(0, start) + wanted + page.slice(end));
}
