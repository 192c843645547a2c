import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import { H264_MP4 } from '../support/job-requests.ts';

const KEY = 'dashboard-test-key-0123456789';
const dashboard = JSON.parse(
  readFileSync(
    new URL('../../deploy/grafana/dashboards/media-service.json', import.meta.url),
    'utf8',
  ),
) as { panels: { title: string; targets: { expr: string }[] }[] };

// Every panel of the shipped dashboard must have a series to draw in all-in-one mode too, while
// jobs wait: in particular the queue panels (jobs waiting, consumer lag), which Kafka fills.
describe('all-in-one: every dashboard panel has data while jobs wait', function () {
  this.timeout(60_000);
  let app: AllInOne | undefined;
  let dataDir: string;
  let stalled: Server;

  before(async () => {
    // An input server that never answers: the jobs that reach a slot stay there, the rest wait.
    stalled = createServer(() => {});
    await new Promise<void>((r) => stalled.listen(0, '127.0.0.1', r));
    dataDir = await mkdtemp(join(tmpdir(), 'media-dashboard-'));
    app = await startTestAllInOne(dataDir, {
      API_KEYS: `${KEY}:org-dash`,
      WORKER_CONCURRENCY: '1',
    });
  });
  after(async () => {
    stalled.closeAllConnections();
    stalled.close();
    await app?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('has a series for every metric a panel queries', async () => {
    const { port } = stalled.address() as AddressInfo;
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${app?.ingress.url}/transcode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          apiKey: KEY,
          inputUrl: `http://127.0.0.1:${port}/in-${i}.mp4`,
          outputUrl: `http://127.0.0.1:${port}/out-${i}.mp4`,
          ...H264_MP4,
        }),
      });
      expect(res.status).to.equal(200);
    }
    const scrape = async (): Promise<string> => (await fetch(app?.ingress.metricsUrl ?? '')).text();
    const missingIn = (text: string): string[] => {
      const names = new Set(
        text
          .split('\n')
          .filter((l) => l && !l.startsWith('#'))
          .map((l) => /^[a-z_]+/.exec(l)?.[0] ?? ''),
      );
      return dashboard.panels.flatMap((p) =>
        p.targets.flatMap((t) =>
          [...t.expr.matchAll(/\b(media_[a-z_]+)/g)]
            .map((m) => m[1] ?? '')
            .filter((name) => !names.has(name))
            .map((name) => `${p.title}: ${name}`),
        ),
      );
    };
    // The queue panels draw what waits: some jobs queued, a backlog on the request topic.
    const queue = [
      /^media_jobs_waiting\{org="org-dash",kind="transcode"\} [1-9]/m,
      /^media_consumer_lag_records\{group="transcoder",topic="media\.jobs\.transcode\.v1",partition="0"\} [1-9]/m,
    ];
    let text = '';
    const end = Date.now() + 20_000;
    do {
      await new Promise((r) => setTimeout(r, 500));
      text = await scrape();
    } while ((missingIn(text).length > 0 || !queue.every((q) => q.test(text))) && Date.now() < end);
    expect(missingIn(text)).to.deep.equal([]);
    for (const q of queue) expect(text).to.match(q);
  });
});
