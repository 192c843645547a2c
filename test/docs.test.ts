import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { errorCatalog } from '../services/core/errors.ts';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README matches the code', () => {
  it('starts with exactly the two command lines', () => {
    expect(readme.split('\n').slice(0, 4)).to.deep.equal([
      '```sh',
      'npm install && npm start',
      'npm install && npm test',
      '```',
    ]);
  });

  it('lists every error code with its HTTP status and retry flag, and no other', () => {
    const rows = [...readme.matchAll(/^\| ([a-z_]+) +\| (\d{3}|–) +\| (yes|no) +\| (.+?) *\|$/gm)];
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
    const { table } = currentConfigTable(readme);
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

  it("every metric the README's table and alert queries name is one the services register", async () => {
    const { Registry } = await import('prom-client');
    const { createMetrics } = await import('../services/core/observability/metrics.ts');
    const registry = new Registry();
    createMetrics(registry, { defaultMetrics: false });
    const known = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    const from = readme.indexOf('### Metrics');
    const to = readme.indexOf('\n### ', readme.indexOf('### What to alert on') + 1);
    const named = [...readme.slice(from, to).matchAll(/\b(media_[a-z_]+)/g)].map((m) =>
      (m[1] ?? '').replace(/_(bucket|sum|count)$/, ''),
    );
    expect(named.length).to.be.greaterThan(20);
    expect(named.filter((name) => !known.has(name))).to.deep.equal([]);
    expect(readme.slice(from, to)).to.match(/media_jobs_finished_total\{outcome="failed"\}/);
  });
});
