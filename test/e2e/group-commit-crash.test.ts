import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnService, type SpawnedService } from '../support/spawn-service.ts';
import { burstThenKill, startHoldingServer } from '../support/submission-burst.ts';
import { H264_MP4 } from '../support/job-requests.ts';

const KEY = 'group-commit-key-0123456789';
const main = new URL('../../services/all-in-one/main.ts', import.meta.url).pathname;

describe('all-in-one as a process: group commit keeps the acknowledgement', function () {
  this.timeout(180_000);
  let dataDir: string;
  let service: SpawnedService | undefined;
  let holding: Awaited<ReturnType<typeof startHoldingServer>>;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'media-group-commit-'));
    holding = await startHoldingServer();
  });
  after(async () => {
    await service?.kill();
    holding.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('every submission acknowledged before a SIGKILL in the middle of a burst is there after the restart', async () => {
    const port = await freePort();
    const env = {
      PORT: String(port),
      API_KEYS: `${KEY}:org-g`,
      // One key sends the whole burst: the per-key rate and per-org caps would answer 429.
      RATE_LIMIT_PER_SECOND: '0',
      MAX_ACTIVE_JOBS_PER_ORG: '0',
      ALLOW_PRIVATE_NETWORKS: 'true',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
    };
    const url = `http://127.0.0.1:${port}`;
    service = spawnService(main, env);
    await service.waitForLog((r) => r['msg'] === 'ingress.listening', 30_000);
    const acknowledged = await burstThenKill(
      service,
      url,
      {
        apiKey: KEY,
        inputUrl: `${holding.url}/in.mp4`,
        outputUrl: `${holding.url}/out.mp4`,
        ...H264_MP4,
      },
      { total: 600, connections: 32, killAfter: 300 },
    );
    expect(acknowledged.length).to.be.at.least(300);
    expect(service.child.signalCode).to.equal('SIGKILL');

    service = spawnService(main, env);
    await service.waitForLog((r) => r['msg'] === 'ingress.listening', 30_000);
    const missing: string[] = [];
    for (const id of acknowledged) {
      const res = await fetch(`${url}/jobs/${id}`, { headers: { 'x-api-key': KEY } });
      if (res.status !== 200) missing.push(id);
      await res.body?.cancel();
    }
    expect(missing, `of ${acknowledged.length} acknowledged`).to.deep.equal([]);
  });
});
