import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSemaphore } from '../../../services/core/scheduling/semaphore.ts';
import { makeJobDir, sweepJobDirs } from '../../../services/core/media-job/work-dirs.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';

describe('semaphore', () => {
  it('runs at most `size` at once, in arrival order, and a waiter whose signal aborts never takes a slot', async () => {
    const slots = createSemaphore(1);
    const order: string[] = [];
    let release = (): void => undefined;
    const first = slots.use(new AbortController().signal, () =>
      new Promise<void>((r) => (release = r)).then(() => void order.push('a')),
    );
    const stopped = new AbortController();
    const second = slots.use(stopped.signal, async () => void order.push('never'));
    const third = slots.use(new AbortController().signal, async () => void order.push('c'));
    expect(slots.inUse).to.equal(1);
    stopped.abort(new Error('job stopped'));
    expect(await second.catch((e: Error) => e.message)).to.equal('job stopped');
    release();
    await Promise.all([first, third]);
    expect(order).to.deep.equal(['a', 'c']);
    expect(slots.inUse).to.equal(0);
  });
});

describe('semaphore: fair between organisations', () => {
  it('a freed slot goes to the waiting organisation holding fewest slots, ahead of older waiters', async () => {
    const sem = createSemaphore(1);
    const signal = new AbortController().signal;
    const order: string[] = [];
    let releaseFirst = (): void => {};
    const first = sem.use(signal, () => new Promise<void>((r) => (releaseFirst = r)), 'a');
    const waiting = ['a', 'a', 'b'].map((org, i) =>
      sem.use(signal, async () => void order.push(`${org}${i}`), org),
    );
    await new Promise((r) => setImmediate(r));
    releaseFirst();
    await Promise.all([first, ...waiting]);
    expect(order).to.deep.equal(['b2', 'a0', 'a1']);
  });
});

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
