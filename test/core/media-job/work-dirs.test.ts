import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeJobDir, sweepJobDirs } from '../../../services/core/media-job/work-dirs.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';

describe('job work dirs', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'media-work-root-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it("removes dirs of dead processes and this process's own leftovers, keeps a live process's dirs and anything else", async () => {
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], {
      stdio: 'ignore',
    });
    const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await new Promise((r) => dead.once('exit', r));
    try {
      const names = [
        `${live.pid}-0123456789abcdef`,
        `${dead.pid}-0123456789abcdef`,
        `${process.pid}-fedcba9876543210`,
        'not-a-job-dir',
      ];
      for (const name of names) await mkdir(join(root, name));
      expect(await sweepJobDirs(root, silentLogger)).to.equal(2);
      expect((await readdir(root)).sort()).to.deep.equal(
        [`${live.pid}-0123456789abcdef`, 'not-a-job-dir'].sort(),
      );
      const dir = await makeJobDir(root);
      expect(dir).to.match(new RegExp(`/${process.pid}-[0-9a-f]{16}$`));
    } finally {
      live.kill('SIGKILL');
    }
  });
});
