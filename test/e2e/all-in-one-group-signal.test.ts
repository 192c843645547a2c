import { expect } from 'chai';
import { useProcessDirs } from './e2e-fixture.ts';
import {
  fileCallbacks,
  postJson,
  transcodeBody,
  waitForProgress,
} from '../support/job-requests.ts';
import { freePort, spawnCommand, type SpawnedService } from '../support/spawn-service.ts';

const KEY = 'group-signal-test-key-0123456789';
const root = new URL('../..', import.meta.url).pathname;

describe('all-in-one under npm start: Ctrl-C to the whole process group drains, it does not fail jobs', function () {
  this.timeout(240_000);
  let service: SpawnedService | undefined;
  // Registered first, so it runs first: the process ends before its directories go.
  after(async () => {
    await service?.kill();
  });
  const dirs = useProcessDirs('group-signal');

  it('SIGINT to the group of `npm start` mid-transcode: the job is handed back, and after a restart succeeds once', async () => {
    const port = await freePort();
    const env = {
      HOME: process.env['HOME'] ?? '/root',
      PORT: String(port),
      API_KEYS: `${KEY}:org-g`,
      ALLOW_PRIVATE_NETWORKS: 'true',
      DATA_DIR: dirs.dataDir,
      WORK_DIR: dirs.workDir,
      LOG_LEVEL: 'info',
      // Shorter than the encode, so the stop hands the job back instead of finishing it.
      SHUTDOWN_GRACE_MS: '1000',
    };
    const start = (): SpawnedService =>
      spawnCommand('npm', ['start', '--silent'], env, { ownGroup: true, cwd: root });
    service = start();
    await service.waitForLog((r) => r['msg'] === 'ingress.listening', 60_000);
    const base = `http://127.0.0.1:${port}`;
    const res = await postJson(
      `${base}/transcode`,
      transcodeBody(dirs.files, 'input.mp4', 'out.mp4', {
        apiKey: KEY,
        ...fileCallbacks(dirs.files),
      }),
    );
    expect(res.status).to.equal(200);
    const id = String(res.body['id']);
    // Until ffmpeg is really encoding the job.
    await waitForProgress(base, KEY, id);

    service.signalGroup('SIGINT');
    // The API stays up while the job drains, and says it is not ready.
    let readyz = 200;
    while (readyz === 200)
      readyz = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
    expect(readyz, '/readyz during the drain').to.equal(503);
    expect(await service.groupGone(30_000), 'every process of the group ended').to.equal(true);
    const msgs = service.logs.map((r) => r['msg']);
    expect(msgs).to.include('service.stopping');
    expect(
      msgs,
      `the job was handed back, not failed: ${JSON.stringify(service.logs.slice(-6))}`,
    ).to.include('job.handed_back');
    expect(msgs).to.not.include('job.failed');
    expect(dirs.files.callbacks).to.have.length(0);

    service = start();
    const callback = await dirs.files.waitForCallback((c) => c.body['jobId'] === id, 180_000);
    expect(callback.body['status']).to.equal('succeeded');
    await new Promise((r) => setTimeout(r, 500));
    expect(dirs.files.callbacks.filter((c) => c.body['jobId'] === id)).to.have.length(1);
    service.signalGroup('SIGINT');
    expect(await service.groupGone(30_000)).to.equal(true);
  });
});
