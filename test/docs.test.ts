import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { errorCatalog } from '../services/core/errors.ts';

const root = new URL('..', import.meta.url).pathname;
const read = (path: string): string => readFileSync(join(root, path), 'utf8');
const readme = read('README.md');
/** README.md and every page under docs/, by path from the repository's root. */
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

describe('README and docs/: the layout', () => {
  it('README is at most about 300 lines', () => {
    expect(readme.split('\n').length).to.be.at.most(300);
  });

  it('README links the contract and every docs page, all inside the repository', () => {
    const links = [...readme.matchAll(/\]\(([^)#]+)[^)]*\)/g)].map((m) => m[1] ?? '');
    for (const page of pages.filter((p) => p.startsWith('docs/')))
      expect(links, page).to.include(page);
    expect(links).to.include('docs/spec/api.md');
  });

  // The shared contract's sha256 when it was copied here: a clone without the shared copy
  // beside it (CI's) still sees a docs/spec/api.md that drifted from it.
  const CONTRACT_SHA256 = '34003fc6197d383a76c577cb9a3f5e097df317a5f9a69faaab1424274e910f99';

  it('docs/spec/api.md is the shared contract, byte for byte (its recorded digest, and the shared copy where it is at hand)', () => {
    const ours = read('docs/spec/api.md');
    expect(createHash('sha256').update(ours).digest('hex')).to.equal(CONTRACT_SHA256);
    const shared = join(root, '../shared/spec/api.md');
    if (existsSync(shared)) expect(ours).to.equal(readFileSync(shared, 'utf8'));
  });

  it('every relative link of README and docs/ names a file of the repository and a heading in it', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target = ''] of read(page).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [path = '', hash] = target.split('#');
        const file = path === '' ? page : relative(root, join(root, dirname(page), path));
        if (file.startsWith('..') || !existsSync(join(root, file))) {
          broken.push(`${page}: ${target}`);
          continue;
        }
        if (hash === undefined || !file.endsWith('.md')) continue;
        const headings = [...read(file).matchAll(/^#+ (.+)$/gm)].map((m) => anchor(m[1] ?? ''));
        if (!headings.includes(hash)) broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).to.deep.equal([]);
  });
});

describe('README and docs/ match the code', () => {
  it('starts with exactly the two command lines', () => {
    expect(readme.split('\n').slice(0, 4)).to.deep.equal([
      '```sh',
      'npm install && npm start',
      'npm install && npm test',
      '```',
    ]);
  });

  it('lists every error code with its HTTP status and retry flag, and no other', () => {
    const rows = [
      ...read('docs/errors.md').matchAll(
        /^\| ([a-z_]+) +\| (\d{3}|–) +\| (yes|no) +\| (.+?) *\|$/gm,
      ),
    ];
    const documented = Object.fromEntries(
      rows.map((r) => [r[1], { http: r[2], retried: r[3], summary: r[4] }]),
    );
    for (const [code, entry] of Object.entries(errorCatalog)) {
      expect(documented[code], code).to.not.equal(undefined);
      expect(documented[code]?.retried, code).to.equal(entry.retryable ? 'yes' : 'no');
      expect(documented[code]?.summary, code).to.equal(entry.summary);
      if (documented[code]?.http !== '–')
        expect(Number(documented[code]?.http), code).to.equal(entry.status);
    }
    expect(Object.keys(documented).sort()).to.deep.equal(Object.keys(errorCatalog).sort());
  });

  it('has the configuration table the declarations in config.ts give, row for row', async function () {
    this.timeout(20_000);
    const { configVariables } = await import('../services/core/config.ts');
    const { currentConfigTable, renderedConfigTable } =
      await import('../scripts/generate-config-table.ts');
    const { table } = currentConfigTable(read('docs/configuration.md'));
    const documented = [...table.matchAll(/^\| ([A-Z0-9_]+) +\|/gm)].map((m) => m[1]);
    expect(configVariables.length).to.be.greaterThan(40);
    expect(documented).to.deep.equal([...configVariables]);
    // Defaults and meanings too: run `npm run generate:config-table` when this fails.
    expect(table).to.equal(await renderedConfigTable());
  });
});

describe('Grafana dashboard matches the metrics', () => {
  it('every metric a panel queries is one the services register', async () => {
    const { Registry } = await import('prom-client');
    const { createMetrics } = await import('../services/core/observability/metrics.ts');
    const registry = new Registry();
    createMetrics(registry, { defaultMetrics: false });
    const known = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    const dashboard = JSON.parse(
      readFileSync(
        new URL('../deploy/grafana/dashboards/media-service.json', import.meta.url),
        'utf8',
      ),
    ) as { panels: { targets: { expr: string }[] }[] };
    const used = dashboard.panels.flatMap((p) =>
      p.targets.flatMap((t) =>
        [...t.expr.matchAll(/\b(media_[a-z_]+)/g)].map((m) =>
          (m[1] ?? '').replace(/_(bucket|sum|count)$/, ''),
        ),
      ),
    );
    expect(used.length).to.be.greaterThan(5);
    for (const name of used) expect(known.has(name), name).to.equal(true);
  });

  it("every metric docs/operating.md's table and alert queries name is one the services register", async () => {
    const { Registry } = await import('prom-client');
    const { createMetrics } = await import('../services/core/observability/metrics.ts');
    const registry = new Registry();
    createMetrics(registry, { defaultMetrics: false });
    const known = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    const operating = read('docs/operating.md');
    const from = operating.indexOf('## Metrics');
    const to = operating.indexOf('\n## ', operating.indexOf('## What to alert on') + 1);
    expect(from).to.be.greaterThan(0);
    expect(to).to.be.greaterThan(from);
    const named = [...operating.slice(from, to).matchAll(/\b(media_[a-z_]+)/g)].map((m) =>
      (m[1] ?? '').replace(/_(bucket|sum|count)$/, ''),
    );
    expect(named.length).to.be.greaterThan(20);
    expect(named.filter((name) => !known.has(name))).to.deep.equal([]);
    expect(operating.slice(from, to)).to.match(/media_jobs_finished_total\{outcome="failed"\}/);
  });
});
