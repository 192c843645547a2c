import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../services/core/config.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { startAllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { freePort } from '../support/spawn-service.ts';

async function withIngress(
  env: Record<string, string>,
  check: (ingress: { url: string; metricsUrl: string }) => Promise<void>,
): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'media-metrics-port-'));
  const app = await startAllInOne(
    loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env }),
    { log: silentLogger },
  );
  try {
    await check(app.ingress);
  } finally {
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

describe('METRICS_PORT: /metrics, /healthz, /readyz apart from the API, in every mode', function () {
  this.timeout(30_000);

  it('all-in-one serves /metrics on METRICS_PORT (with /healthz, /readyz), never on the API port', async () => {
    const port = await freePort();
    await withIngress({ METRICS_PORT: String(port) }, async (ingress) => {
      expect(ingress.metricsUrl).to.equal(`http://127.0.0.1:${port}/metrics`);
      const metrics = await fetch(ingress.metricsUrl);
      expect(metrics.status).to.equal(200);
      expect(await metrics.text()).to.match(/^media_jobs_submitted_total\{kind="transcode"\} 0$/m);
      const ops = ingress.metricsUrl.replace(/\/metrics$/, '');
      expect((await fetch(`${ops}/readyz`)).status).to.equal(200);
      expect((await fetch(`${ops}/healthz`)).status).to.equal(200);
      const onApi = await fetch(`${ingress.url}/metrics`);
      expect(onApi.status).to.equal(404);
      expect(await onApi.json()).to.have.keys('error');
      expect((await fetch(`${ingress.url}/healthz`)).status).to.equal(200);
      expect((await fetch(`${ingress.url}/readyz`)).status).to.equal(200);
    });
  });

  it('by default it is 9464, as for a worker on its own', () => {
    expect(loadConfig({}).metricsPort).to.equal(9464);
  });

  it('INGRESS_METRICS_PORT, which meant another port in one mode only, is refused at start', () => {
    expect(() => loadConfig({ INGRESS_METRICS_PORT: '9100' })).to.throw(
      ConfigError,
      /INGRESS_METRICS_PORT is no longer read; use METRICS_PORT/,
    );
  });
});
