// Writes README's configuration table from the declarations in services/core/config.ts, so the
// documented variables, defaults and meanings are the ones the code reads.
// `npm run generate:config-table` rewrites the table; `--check` exits 1 when it is stale.
import { readFile, writeFile } from 'node:fs/promises';
import { format, resolveConfig } from 'prettier';
import { configTable } from '../services/core/config.ts';

const readmeFile = new URL('../README.md', import.meta.url).pathname;

/** The table as prettier lays it out in README.md. */
export async function renderedConfigTable(): Promise<string> {
  const options = (await resolveConfig(readmeFile)) ?? {};
  return format(configTable(), { ...options, parser: 'markdown' });
}

/** README's configuration table as it stands: from its `| variable` header to the last row. */
export function currentConfigTable(readme: string): { start: number; end: number; table: string } {
  const start = readme.search(/^\| variable +\| default +\| meaning +\|$/m);
  if (start < 0)
    throw new Error('README.md has no configuration table (| variable | default | meaning |)');
  const after = readme.slice(start).search(/^(?!\|)/m);
  const end = after < 0 ? readme.length : start + after;
  return { start, end, table: readme.slice(start, end) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const readme = await readFile(readmeFile, 'utf8');
  const { start, end, table } = currentConfigTable(readme);
  const wanted = await renderedConfigTable();
  if (process.argv.includes('--check')) {
    if (table !== wanted) {
      process.stderr.write(
        'README.md configuration table is stale: run npm run generate:config-table\n',
      );
      process.exit(1);
    }
  } else await writeFile(readmeFile, readme.slice(0, start) + wanted + readme.slice(end));
}
