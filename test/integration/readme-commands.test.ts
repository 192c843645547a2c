import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SealedSecret } from '../../services/core/contracts/types.generated.ts';
import { open } from '../../services/core/crypto/secret-box.ts';
import { readTopic } from '../support/kafka-raw.ts';
import { requireEnv } from '../support/kafka-stack.ts';

// Every command README.md and docs/ show must work as written on a fresh machine after the README's first line,
// whatever `node` the machine has (Debian's is Node 20, which cannot run our .ts files): so
// each goes through npm, whose scripts find Node 24 in node_modules/.bin. The commands run here
// with a PATH that holds the machine's own tools only.
const root = new URL('../..', import.meta.url).pathname;
const machinePath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Commands of a page: lines of its sh blocks (continuations joined) and inline npm/node spans. */
function readmeCommands(readme: string): string[] {
  const commands = new Set<string>();
  for (const block of readme.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const joined = (block[1] ?? '').replace(/\\\n/g, ' ');
    for (const line of joined.split('\n')) {
      const command = line.replace(/\s+#.*$/, '').trim();
      if (command && !command.startsWith('#') && !/^[\s"'}]/.test(line) && !command.startsWith('}'))
        commands.add(command.replace(/\s+/g, ' '));
    }
  }
  for (const span of readme.matchAll(/`((?:npm|node|npx) [^`]+)`/g))
    commands.add((span[1] ?? '').trim());
  return [...commands];
}

/** The command without leading VAR=value assignments. */
const program = (command: string): string => command.replace(/^(?:[A-Z_]+=\S+ )+/, '');

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: Record<string, string>, timeoutMs: number): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, {
      cwd: root,
      env: { PATH: machinePath, HOME: process.env['HOME'] ?? '/root', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts a long-running npm script, waits for a log line, then stops its whole process group. */
async function serveUntil(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs: number,
): Promise<{ output: string }> {
  const child: ChildProcess = spawn('npm', args, {
    cwd: root,
    env: { PATH: machinePath, HOME: process.env['HOME'] ?? '/root', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const seen = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    const check = (c: Buffer): void => {
      output += c.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve(true);
      }
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    void exited.then(() => resolve(false));
  });
  const ok = await seen;
  if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
  await exited;
  expect(ok, `${args.join(' ')} never logged ${String(ready)}:\n${output.slice(-2000)}`).to.equal(
    true,
  );
  return { output };
}

let commands: string[];
let dataDir: string;
/** Runs the README's example producer on a fresh topic prefix; its job id and the records it wrote. */
async function produceExample(extraEnv: Record<string, string>) {
  const brokers = requireEnv('TEST_KAFKA_BROKERS');
  const prefix = `readme-${randomUUID().slice(0, 8)}.`;
  const ran = await run(
    ['run', '--silent', 'example:produce'],
    {
      KAFKA_BROKERS: brokers,
      TOPIC_PREFIX: prefix,
      ORG_ID: 'acme',
      INPUT_URL: 'https://files.example.com/in.mp4',
      OUTPUT_URL: 'https://files.example.com/out.webm',
      ...extraEnv,
    },
    60_000,
  );
  expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
  const id = ran.stdout.trim();
  const records = await readTopic(brokers, `${prefix}media.jobs.transcode.v1`, {
    minRecords: 1,
    timeoutMs: 15_000,
  });
  return { id, records };
}

describe('README commands, run as written with the machine’s own node on PATH', function () {
  this.timeout(300_000);

  before(async () => {
    const docs = (await readdir(join(root, 'docs'), { recursive: true }))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join('docs', f));
    const pages = await Promise.all(
      ['README.md', ...docs].map((page) => readFile(join(root, page), 'utf8')),
    );
    commands = [...new Set(pages.flatMap(readmeCommands))];
    dataDir = await mkdtemp(join(tmpdir(), 'readme-commands-'));
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  describesCommandRunsTsFile();

  for (const script of ['generate:types', 'generate:openapi', 'generate:config-table'])
    it(`npm run ${script}`, async () => {
      const ran = await run(['run', script], {}, 60_000);
      expect(ran.code, ran.stderr).to.equal(0);
    });

  describesNpmRunBenchTranscode();

  describesNpmRunBenchSummary();

  describesNpmRunBenchBacklog();

  describesNpmRunSilentExample();

  for (const service of ['ingress', 'transcoder', 'summarizer', 'notifier'] as const)
    it(`npm run start:${service} (on the test broker)`, async () => {
      const env = {
        KAFKA_BROKERS: requireEnv('TEST_KAFKA_BROKERS'),
        KAFKA_TOPIC_PREFIX: `readme-${randomUUID().slice(0, 8)}.`,
        CREDENTIALS_KEYS: `k1:${Buffer.alloc(32, 3).toString('base64')}`,
        API_KEYS: 'readme-test-key-0123456789:acme',
        // The notifier refuses to send unsigned callbacks unless told to.
        WEBHOOK_SECRETS: `acme:whsec_${Buffer.alloc(24, 7).toString('base64')}`,
        PORT: '0',
        METRICS_PORT: '0',
      };
      const ready =
        service === 'ingress'
          ? /"msg":"ingress.listening"/
          : new RegExp(`"msg":"${service}.started"`);
      await serveUntil(['run', `start:${service}`], env, ready, 120_000);
    });
});

function describesCommandRunsTsFile(): void {
  it('no command runs a .ts file with whatever node the machine has: all go through npm', () => {
    expect(commands.length).to.be.greaterThan(5);
    const direct = commands.filter(
      (c) => /^(node|npx) /.test(program(c)) || / node [^ ]+\.ts/.test(c),
    );
    expect(direct).to.deep.equal([]);
  });

  it('every command is one this test runs, or says why not', () => {
    const known = [
      /^npm install && npm (start|test)$/, // the two first lines: npm start is run below; npm test is this suite
      /^npm install$/, // the Quick start's first step: test/quickstart.test.ts runs it with node_modules in place
      /^npm run quickstart:files$/, // the Quick start: test/quickstart.test.ts runs it as written
      /^npm start$/,
      /^npm test$/, // this suite
      /^npm run test:(unit|integration)$/, // the two halves of this suite
      /^npm run generate:(types|openapi|config-table)$/,
      /^npm run start:(ingress|transcoder|summarizer|streamer|notifier)$/,
      /^npm run bench:transcode -- /,
      /^npm run bench:quality -- /,
      /^npm run bench:summary -- /,
      /^npm run bench:stream -- /,
      /^npm run bench:stream-quality -- /,
      /^npm run bench:ladder -- /,
      /^npm run bench:tracing -- /,
      /^npm run bench:fairness -- /,
      /^npm run bench:(ingress|footprint) -- /,
      /^npm run bench:(status-view|backlog|scale-out) -- /,
      /^npm run --silent example:produce$/,
      /^echo '\{[^']*\}' \| npm run --silent seal-credentials -- [0-9a-f-]{36}$/,
      /^KEY=\$\(cat \.data\/api-key\)$/, // a shell assignment
      /^ACK=\$\(curl /, // the Quick start's submission: test/quickstart.test.ts runs it as written
      /^echo "\$ACK"$/, // the Quick start: its acknowledgement shown
      /^ID=\$\(echo "\$ACK" \| sed /, // the Quick start: the job id read from it
      /^export [A-Z_]+=/, // settings for the commands that follow
      /^npm install [a-z@]/, // a package for the reader's own project (e.g. a callback receiver)
      /^curl /, // HTTP calls to the running service: the API tests make the same calls
    ];
    const unknown = commands.filter((c) => !known.some((k) => k.test(program(c)) || k.test(c)));
    expect(unknown, 'commands of README.md and docs/ this test does not cover').to.deep.equal([]);
  });
}

function describesNpmRunBenchTranscode(): void {
  it('npm run bench:transcode -- 1 1 h264 (short arguments)', async () => {
    const ran = await run(['run', 'bench:transcode', '--', '1', '1', 'h264'], {}, 120_000);
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(/\| h264\/mp4 \| [\d.]+ \| [\d.]+ \| [\d.]+ \|/);
  });

  it('npm run bench:quality -- slides-short h264 1000 (one short clip, one encoder)', async () => {
    const json = join(dataDir, 'quality.json');
    const ran = await run(
      ['run', 'bench:quality', '--', 'slides-short', 'h264', '1000', json],
      {
        TEST_VMAF_FFMPEG: requireEnv('TEST_VMAF_FFMPEG'),
        TEST_CORPUS_SOURCES: requireEnv('TEST_CORPUS_SOURCES'),
      },
      180_000,
    );
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(/\| slides-short \(natural\) \| h264 \| 1000 \| [\d.]+ \(/);
    expect(ran.stdout).to.match(/^\d\/1 cases pass every rule; failures: bitrate \d/m);
    const rows = JSON.parse(await readFile(json, 'utf8')) as { encoder: string }[];
    expect(rows.map((r) => r.encoder)).to.deep.equal(['h264']);
  });

  it('npm run bench:stream -- 2 1 (a short input)', async () => {
    const ran = await run(['run', 'bench:stream', '--', '2', '1'], {}, 300_000);
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(/\| service \/ separate \| [\d.]+ \|/);
  });

  it('npm run bench:stream-quality -- smpte-bars-short h264 (one short clip, one encoder)', async () => {
    const ran = await run(
      ['run', 'bench:stream-quality', '--', 'smpte-bars-short', 'h264'],
      {
        TEST_VMAF_FFMPEG: requireEnv('TEST_VMAF_FFMPEG'),
        TEST_CORPUS_SOURCES: requireEnv('TEST_CORPUS_SOURCES'),
      },
      300_000,
    );
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(
      /\| smpte-bars-short \(synthetic\) \| h264 \| 360p \| \d+ \| [\d.]+ \(/,
    );
    expect(ran.stdout).to.match(/^\d+\/\d+ rungs pass every rule$/m);
  });

  it('npm run bench:ladder -- slides-short h264 (one short clip)', async () => {
    const ran = await run(
      ['run', 'bench:ladder', '--', 'slides-short', 'h264'],
      {
        TEST_VMAF_FFMPEG: requireEnv('TEST_VMAF_FFMPEG'),
        TEST_CORPUS_SOURCES: requireEnv('TEST_CORPUS_SOURCES'),
      },
      300_000,
    );
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(/^\| slides-short \| fixed \| 360p 800 → [\d.]+/m);
    expect(ran.stdout).to.match(/^\| slides-short \| per-title \| 360p \d+ → [\d.]+/m);
    expect(ran.stdout).to.match(/^\| slides-short \| per-title \/ fixed bits \| \| [\d.]+ \|/m);
  });

  it('npm run bench:tracing -- 1 20 (short arguments)', async () => {
    const ran = await run(['run', 'bench:tracing', '--', '1', '20'], {}, 120_000);
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(/on, traceparent +\d+ µs/);
    expect(ran.stdout).to.match(/no-op tracing calls of one submission: \d+ ns/);
  });
}

function describesNpmRunBenchSummary(): void {
  it('npm run bench:summary -- 1 0.5 mp4,gif@160 (short arguments, a GIF with a width)', async () => {
    const ran = await run(['run', 'bench:summary', '--', '1', '0.5', 'mp4,gif@160'], {}, 300_000);
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    // wall s | wall ratio (lowest–highest per round) | CPU s | CPU ratio
    expect(ran.stdout).to.match(
      /\| mp4 summary job \(\d+ segments[^|]*\| [\d.]+ \| [\d.]+ \([\d.]+–[\d.]+\) \| [\d.]+ \| [\d.]+ \|/,
    );
    expect(ran.stdout).to.match(/\| gif@160 summary job \(\d+ segments, [\d.]+ s, 160×\d+,/);
    expect(ran.stdout).to.match(/round 1 gif@160: .*render [\d.]+\/[\d.]+/);
    expect(ran.stdout).to.match(
      /MP4 render parts again: as the job ran them [\d.]+ s \([\d.]+ CPU s\); every clip from the keyframe at or before its start [\d.]+ s \([\d.]+ CPU s\)\. The MP4 job with no decoding before its clips would take about [\d.]+ of the full decode\./,
    );
  });

  it('npm run bench:ingress -- 1 1 embedded (short arguments)', async () => {
    const ran = await run(['run', 'bench:ingress', '--', '1', '1', 'embedded'], {}, 180_000);
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    // bare/s | floor/s | floor ratio | ingress/s | ratio
    expect(ran.stdout).to.match(/\| embedded +\| +\d+ \| +\d+ \| +[\d.]+ \| +\d+ \| +[\d.]+ \|/);
    expect(ran.stdout).to.match(
      /CPU per accepted request \(ms, median\): bare [\d.]+, floor [\d.]+, ingress [\d.]+/,
    );
    expect(ran.stdout).to.match(
      /machine CPU per accepted request, every process \(ms, median\): bare [\d.]+, floor [\d.]+, ingress [\d.]+; at most [\d.]+ for half the bare rate on \d+ cores/,
    );
  });

  it('npm run bench:footprint -- 0.02 (a small input)', async () => {
    const ran = await run(['run', 'bench:footprint', '--', '0.02'], {}, 300_000);
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(/\| all-in-one idle 10 s, warm compile cache +\| +\d+ \|/);
    expect(ran.stdout).to.match(/\| peak while transcoding a [\d.]+ GB input +\| +\d+ \|/);
  });

  it('npm run bench:fairness -- 2 2 1 all-in-one (short arguments)', async () => {
    const ran = await run(
      ['run', 'bench:fairness', '--', '2', '2', '1', 'all-in-one'],
      {},
      300_000,
    );
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(/org B started -?[\d.]+ s after submission/);
    expect(ran.stdout).to.match(
      /ideal \(total work [\d.]+ s: 2 × [\d.]+ s \+ [\d.]+ s, each job alone/,
    );
  });

  it('npm run bench:status-view -- 300 1 (a short history on the test broker)', async () => {
    const ran = await run(
      ['run', 'bench:status-view', '--', '300', '1'],
      { KAFKA_BROKERS: requireEnv('TEST_KAFKA_BROKERS') },
      300_000,
    );
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(/GET \/jobs\/:id of the newest job answered 200 [\d.]+ s after/);
    expect(ran.stdout).to.match(/the 10 newest found: 10\/10; the oldest answers 200/);
  });
}

function describesNpmRunBenchBacklog(): void {
  it('npm run bench:backlog -- 3 all-in-one (a short burst)', async () => {
    const ran = await run(['run', 'bench:backlog', '--', '3', 'all-in-one'], {}, 300_000);
    expect(ran.code, ran.stderr.slice(-2000)).to.equal(0);
    expect(ran.stdout).to.match(
      /terminal 3\/3 \(failed 0\); with a callback 3\/3; more than one callback: 0/,
    );
    expect(ran.stdout).to.match(/machine CPU while draining \(\/proc\/stat\): \d+ % \(cpu0 \d+ %/);
  });
}

function describesNpmRunSilentExample(): void {
  it('npm run --silent example:produce (against the test broker)', async () => {
    const { id, records } = await produceExample({ SUCCESS_URL: 'https://hooks.example.com/ok' });
    expect(id).to.match(/^[0-9a-f-]{36}$/);
    expect(records.map((r) => r.key)).to.include(id);
  });

  it('MODE=binary npm run --silent example:produce: attributes in ce_ headers, the data as the value', async () => {
    const { id, records } = await produceExample({ MODE: 'binary' });
    const mine = records.find((r) => r.key === id);
    expect(mine?.headers).to.include({
      ce_specversion: '1.0',
      ce_type: 'media.job.requested',
      ce_subject: id,
      'content-type': 'application/json',
    });
    expect(JSON.parse(mine?.value.toString() ?? '{}')).to.include({ jobId: id, orgId: 'acme' });
  });

  it('echo … | npm run --silent seal-credentials -- <job id>: a sealed object that opens only in that job', async () => {
    const line = commands.find((c) => c.includes('seal-credentials'));
    expect(line, 'docs/kafka.md shows the command').to.be.a('string');
    const key = randomBytes(32);
    const child = spawn('sh', ['-c', line ?? ''], {
      cwd: root,
      env: {
        PATH: machinePath,
        HOME: process.env['HOME'] ?? '/root',
        CREDENTIALS_KEYS: `k1:${key.toString('base64')}`,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).to.equal(0);
    const sealed = JSON.parse(stdout) as SealedSecret;
    expect(sealed).to.include({ alg: 'A256GCM', keyId: 'k1' });
    const jobId = /-- ([0-9a-f-]{36})$/.exec(line ?? '')?.[1] ?? '';
    const creds = JSON.parse(/'(\{[^']*\})'/.exec(line ?? '')?.[1] ?? '{}') as unknown;
    expect(open(sealed, [{ id: 'k1', key }], jobId)).to.deep.equal(creds);
    expect(() => open(sealed, [{ id: 'k1', key }], randomUUID())).to.throw();
    expect(stdout + stderr).not.to.contain('example-secret');
  });

  it('npm start (all-in-one) serves, and stops on SIGTERM', async () => {
    const { output } = await serveUntil(
      ['start'],
      { PORT: '0', DATA_DIR: join(dataDir, 'all-in-one'), METRICS_PORT: '0' },
      /"msg":"ingress.listening"/,
      120_000,
    );
    expect(output).to.contain('"msg":"service.stopping"');
  });
}
