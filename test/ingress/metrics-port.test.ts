import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../services/core/config.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { startAllInOne } from '../../services/all-in-one/start-all-in-one.ts';

async function withIngress(
  env: Record<string, string>,
  check: (ingress: { url: string; metricsUrl?: string }) => Promise<void>,
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

describe('ingress: /metrics on the API port or on a port of its own', function () {
  this.timeout(30_000);

  it('by default (INGRESS_METRICS_PORT unset) serves /metrics on the API port, as before', async () => {
    await withIngress({}, async (ingress) => {
      expect(ingress.metricsUrl).to.equal(undefined);
      const res = await fetch(`${ingress.url}/metrics`);
      expect(res.status).to.equal(200);
      expect(await res.text()).to.match(/^media_jobs_submitted_total\{kind="transcode"\} 0$/m);
    });
  });

  it('with INGRESS_METRICS_PORT serves it there (with /healthz, /readyz) and no longer on the API port', async () => {
    await withIngress({ INGRESS_METRICS_PORT: '0' }, async (ingress) => {
      expect(ingress.metricsUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const metrics = await fetch(ingress.metricsUrl ?? '');
      expect(metrics.status).to.equal(200);
      expect(await metrics.text()).to.match(/^media_jobs_submitted_total\{kind="transcode"\} 0$/m);
      const ops = (ingress.metricsUrl ?? '').replace(/\/metrics$/, '');
      expect((await fetch(`${ops}/readyz`)).status).to.equal(200);
      const onApi = await fetch(`${ingress.url}/metrics`);
      expect(onApi.status).to.equal(404);
      expect(await onApi.json()).to.have.keys('error');
      expect((await fetch(`${ingress.url}/healthz`)).status).to.equal(200);
    });
  });
});
