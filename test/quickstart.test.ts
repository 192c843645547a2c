import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { freePort } from './support/spawn-service.ts';

// The README's Quick start, followed as written from a clean clone (`git clone` of this
// repository's committed state, its node_modules linked in), with the machine's own tools on PATH
// as a reader has them: its code blocks are read from the README and run, each terminal as a
// shell of its own. Two departures, both forced: `npm install` is not run (node_modules is this
// checkout's, already installed, and shared), and the ports 8080 and 8090 the blocks name are
// swapped for free ones (the machine is shared; METRICS_PORT=0 likewise).
const root = new URL('..', import.meta.url).pathname;
const machinePath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const run = promisify(execFile);

/** The sh blocks of the README's "Quick start" section, in order, as lines. */
function quickStartBlocks(readme: string): string[][] {
  const start = readme.indexOf('\n## Quick start\n');
  const end = readme.indexOf('\n## ', start + 1);
  expect(start, 'README has a Quick start').to.be.greaterThan(0);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    (m[1] ?? '').trimEnd().split('\n'),
  );
}

/** A terminal: a shell in the clone whose output is kept, stopped with its whole process group. */
interface Terminal {
  child: ChildProcess;
  output: () => string;
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

function openTerminal(cwd: string, env: Record<string, string>, script?: string): Terminal {
  const child = spawn('bash', script === undefined ? [] : ['-c', script], {
    cwd,
    env: { PATH: machinePath, HOME: process.env['HOME'] ?? '/root', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const listeners = new Set<() => void>();
  const take = (c: Buffer): void => {
    output += c.toString();
    listeners.forEach((l) => l());
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    child,
    output: () => output,
    waitFor(pattern, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const found = pattern.exec(output);
          if (!found) return;
          done();
          resolve(found);
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(`no ${String(pattern)} within ${timeoutMs} ms:\n${output.slice(-3000)}`),
          );
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        void exited.then(check);
        check();
      });
    },
    async stop() {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null)
        process.kill(-child.pid, 'SIGTERM');
      await exited;
    },
  };
}

/** Types a block into an interactive terminal and waits until it has run. */
async function type(terminal: Terminal, lines: string[], timeoutMs: number): Promise<string> {
  const marker = `__block_${Math.random().toString(36).slice(2)}__`;
  const before = terminal.output().length;
  terminal.child.stdin?.write(`${lines.join('\n')}\necho ${marker}\n`);
  await terminal.waitFor(new RegExp(marker), timeoutMs);
  return terminal.output().slice(before).split(marker)[0] ?? '';
}

let clone: string;
const terminals: Terminal[] = [];

describe('the README Quick start, as written, from a clean clone', function () {
  this.timeout(240_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'quickstart-'));
    clone = join(dir, 'media-service');
    await run('git', ['clone', '--quiet', root, clone]);
    await symlink(join(root, 'node_modules'), join(clone, 'node_modules'));
  });
  after(async () => {
    for (const t of terminals) await t.stop();
    await rm(dir, { recursive: true, force: true });
  });

  describesRunsBlocksJobSucceeds();

  describesReceiverTerminal1Refuses();
});

function describesRunsBlocksJobSucceeds(): void {
  it('runs the blocks: a job succeeds and its signed callback arrives and verifies, within a minute', async () => {
    const readme = await readFile(join(clone, 'README.md'), 'utf8');
    const blocks = quickStartBlocks(readme);
    expect(
      blocks.length,
      'four sh blocks: terminal 1, terminal 2, terminal 3, the status',
    ).to.equal(4);
    const [files, service, submit, status] = blocks as [string[], string[], string[], string[]];
    expect(files).to.deep.equal(['npm install', 'npm run quickstart:files']);
    expect(service).to.deep.equal(['ALLOW_PRIVATE_NETWORKS=true npm start']);

    const apiPort = await freePort();
    const filesPort = await freePort();
    const ports = (lines: string[]): string[] =>
      lines.map((l) =>
        l
          .replaceAll('localhost:8080', `localhost:${apiPort}`)
          .replaceAll('127.0.0.1:8090', `127.0.0.1:${filesPort}`),
      );
    const env = {
      PORT: String(apiPort),
      QUICKSTART_PORT: String(filesPort),
      METRICS_PORT: '0',
    };

    // Terminal 1 (its `npm install` aside, see above) and terminal 2 run until stopped.
    const terminal1 = openTerminal(clone, env, files.slice(1).join('\n'));
    terminals.push(terminal1);
    await terminal1.waitFor(/serving http:\/\/127\.0\.0\.1:\d+\/files\/sample\.mp4/, 120_000);
    const terminal2 = openTerminal(clone, env, service.join('\n'));
    terminals.push(terminal2);
    await terminal2.waitFor(/"msg":"ingress\.listening"/, 120_000);

    // Terminal 3: the submission, then (once terminal 1 shows the callback) the status.
    const terminal3 = openTerminal(clone, env);
    terminals.push(terminal3);
    const submitted = Date.now();
    const shown = await type(terminal3, ports(submit), 30_000);
    const ack = JSON.parse(shown.trim()) as { id: string; status: string };
    expect(ack.status, shown).to.equal('queued');

    const callback = await terminal1.waitFor(
      new RegExp(`callback /callbacks/done: job ${ack.id} (\\w+): .*; (.*)\\n`),
      60_000,
    );
    expect(Date.now() - submitted).to.be.below(60_000);
    expect(callback[1], terminal1.output()).to.equal('succeeded');
    expect(callback[2]).to.equal('signature verified with .data/webhook-secret');
    expect(terminal1.output()).to.match(/upload out\.mp4: \d+ bytes/);

    const answer = await type(terminal3, ports(status), 30_000);
    const job = JSON.parse(answer.trim()) as {
      id: string;
      status: string;
      result: { width: number; outputUrl: string };
      callback: { state: string; lastStatus: number };
    };
    expect(job).to.include({ id: ack.id, status: 'succeeded' });
    expect(job.result.width).to.equal(480);
    expect(job.result.outputUrl).to.equal(`http://127.0.0.1:${filesPort}/files/out.mp4`);
    expect(job.callback).to.include({ state: 'delivered', lastStatus: 204 });
  });
}

function describesReceiverTerminal1Refuses(): void {
  it('the receiver of terminal 1 refuses a callback signed with another secret', async () => {
    const terminal1 = terminals[0];
    expect(terminal1, 'the Quick start ran').to.not.equal(undefined);
    const port = /serving http:\/\/127\.0\.0\.1:(\d+)\//.exec(terminal1?.output() ?? '')?.[1];
    const secret = (await readFile(join(clone, '.data', 'webhook-secret'), 'utf8')).trim();
    const forger = new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    expect(secret).to.match(/^whsec_/);
    const body = JSON.stringify({ jobId: 'forged', status: 'failed', code: 'x', message: 'y' });
    const id = 'forged-1';
    const at = new Date();
    const res = await fetch(`http://127.0.0.1:${port}/callbacks/done`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': forger.sign(id, at, body),
      },
      body,
    });
    expect(res.status).to.equal(400);
    await terminal1?.waitFor(/job forged failed: x y; signature NOT verified/, 5_000);
  });
}
