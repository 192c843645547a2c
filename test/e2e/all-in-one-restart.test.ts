import { expect } from 'chai';
import { readdir, readFile } from 'node:fs/promises';
import { useProcessDirs } from './e2e-fixture.ts';
import { jobStatus, postJson, transcodeBody, waitForProgress } from '../support/job-requests.ts';
import { freePort, spawnService, type SpawnedService } from '../support/spawn-service.ts';

const KEY = 'restart-test-key-0123456789';
const main = new URL('../../services/all-in-one/main.ts', import.meta.url).pathname;

describe('all-in-one as a process: accepted jobs survive a crash', function () {
  this.timeout(180_000);
  let service: SpawnedService | undefined;
  // Registered first, so it runs first: the process ends before its directories go.
  after(async () => {
    await service?.kill();
  });
  const dirs = useProcessDirs('restart');

  it('a job running when the process is SIGKILLed runs again after the restart and succeeds once', async () => {
    const port = await freePort();
    const env = {
      PORT: String(port),
      API_KEYS: `${KEY}:org-r`,
      ALLOW_PRIVATE_NETWORKS: 'true',
      DATA_DIR: dirs.dataDir,
      WORK_DIR: dirs.workDir,
      LOG_LEVEL: 'info',
    };
    service = spawnService(main, env);
    await service.waitForLog((r) => r['msg'] === 'ingress.listening', 20_000);
    const base = `http://127.0.0.1:${port}`;
    const res = await postJson(
      `${base}/transcode`,
      transcodeBody(dirs.files, 'input.mp4', 'out.mp4', {
        apiKey: KEY,
        successUrl: `${dirs.files.url}/callbacks/ok`,
      }),
    );
    expect(res.status).to.equal(200);
    const id = String(res.body['id']);
    // Wait until ffmpeg is really working on it, then crash the whole process.
    await waitForProgress(base, KEY, id);
    const [jobDir] = await readdir(dirs.workDir);
    expect(jobDir, 'the job has a work dir').to.be.a('string');
    expect(await processesUsing(dirs.workDir), 'ffmpeg runs in the job dir').to.not.deep.equal([]);
    await service.kill();
    expect(dirs.files.callbacks).to.have.length(0);
    // pdeathsig: the kernel kills ffmpeg with its worker, also on kill -9.
    expect(
      await gone(() => processesUsing(dirs.workDir), 3000),
      'no ffmpeg of the killed worker is left',
    ).to.equal(true);
    expect(await readdir(dirs.workDir), 'the dead process left its dir behind').to.deep.equal([
      jobDir,
    ]);

    service = spawnService(main, env);
    const callback = await dirs.files.waitForCallback((c) => c.body['jobId'] === id, 150_000);
    expect(callback.body['status']).to.equal('succeeded');
    expect((await jobStatus(base, KEY, id))['status']).to.equal('succeeded');
    await new Promise((r) => setTimeout(r, 500));
    expect(dirs.files.callbacks.filter((c) => c.body['jobId'] === id)).to.have.length(1);
    expect(
      await readdir(dirs.workDir),
      "the start swept the dead process's dir, and the rerun removed its own",
    ).to.deep.equal([]);
    expect(await service.stop()).to.equal(0);
  });
});

/** Pids whose command line names `path` (ffmpeg gets its job dir's files as arguments). */
async function processesUsing(path: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(path)) pids.push(Number(entry));
  }
  return pids;
}

async function gone(find: () => Promise<number[]>, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if ((await find()).length === 0) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return (await find()).length === 0;
}
