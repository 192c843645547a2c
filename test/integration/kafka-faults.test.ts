import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { loadConfig } from '../../services/core/config.ts';
import { longClip, SHORT_CLIP } from '../support/clip-server.ts';
import type { TestServer } from '../support/file-server.ts';
import { fileCallbacks, transcodeBody } from '../support/job-requests.ts';
import {
  eventually,
  requireEnv,
  startStackWithClips,
  type KafkaStack,
} from '../support/kafka-stack.ts';

const run = promisify(execFile);

let files: TestServer;
let stack: KafkaStack;
let kafkaCtl: string;
const job = (name: string, input = 'short.mp4'): Record<string, unknown> =>
  transcodeBody(files, input, name, { width: 160, ...fileCallbacks(files) });

describe('Kafka fault tests: a killed worker, a broker that goes away', function () {
  this.timeout(300_000);

  before(async () => {
    kafkaCtl = requireEnv('TEST_KAFKA_CTL');
    requireEnv('TEST_SERVICES_STATE_DIR');
    ({ files, stack } = await startStackWithClips(
      { 'short.mp4': SHORT_CLIP, 'long.mp4': longClip(20) },
      { transcoders: 2, notifiers: 1 },
    ));
  });
  after(async () => {
    if (kafkaCtl) await run('bash', [kafkaCtl, 'start']).catch(() => undefined);
    await stack?.close();
    await files?.close();
  });

  describesWorkerSIGKILLedMidJob();

  describesBrokerStoppedRestartedDuring();
});

function describesWorkerSIGKILLedMidJob(): void {
  it('a worker SIGKILLed mid-job: the job is redelivered to the other worker and succeeds once', async () => {
    const ack = await stack.submit('/transcode', { ...job('killed.mp4', 'long.mp4'), width: 1280 });
    const id = String(ack.body['id']);
    await eventually(
      async () => Number((await stack.status(id))['progressPercent'] ?? 0) > 5,
      60_000,
      'the job to make progress',
    );
    const owner = stack.workers.transcoder.find((w) =>
      w.logs.some((r) => r['msg'] === 'job.started' && r['jobId'] === id),
    );
    expect(owner, 'a worker logged job.started').to.not.equal(undefined);
    await owner?.kill();
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 200_000);
    expect(callback.body['status']).to.equal('succeeded');
    const other = stack.workers.transcoder.find((w) => w !== owner);
    expect(other?.logs.some((r) => r['msg'] === 'job.succeeded' && r['jobId'] === id)).to.equal(
      true,
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(files.callbacks.filter((c) => c.body['jobId'] === id)).to.have.length(1);
  });

  it('a worker stopped with SIGTERM mid-job hands the job back within its grace period; it succeeds once elsewhere', async () => {
    await stack.start('transcoder');
    const ack = await stack.submit('/transcode', { ...job('termed.mp4', 'long.mp4'), width: 1280 });
    const id = String(ack.body['id']);
    await eventually(
      async () => Number((await stack.status(id))['progressPercent'] ?? 0) > 5,
      60_000,
      'the job to make progress',
    );
    const owner = stack.workers.transcoder.find(
      (w) =>
        w.child.exitCode === null &&
        w.logs.some((r) => r['msg'] === 'job.started' && r['jobId'] === id),
    );
    expect(owner, 'a live worker logged job.started').to.not.equal(undefined);
    const stopped = performance.now();
    expect(await owner?.stop(20_000), 'exit code after SIGTERM').to.equal(0);
    // SHUTDOWN_GRACE_MS is 3 s in the stack: the 20 s encode cannot finish, so it is handed back.
    expect(performance.now() - stopped).to.be.below(15_000);
    expect(owner?.logs.some((r) => r['msg'] === 'job.handed_back' && r['jobId'] === id)).to.equal(
      true,
    );
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 200_000);
    expect(callback.body['status']).to.equal('succeeded');
    await new Promise((r) => setTimeout(r, 1000));
    expect(files.callbacks.filter((c) => c.body['jobId'] === id)).to.have.length(1);
  });
}

function describesBrokerStoppedRestartedDuring(): void {
  it('broker stopped and restarted during a burst: outage submissions get 503 quickly, every acknowledged job ends', async () => {
    const acked: string[] = [];
    const during: { status: number; ms: number }[] = [];
    const submitSome = async (n: number, into?: typeof during): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const res = await stack.submit('/transcode', job(`burst-${acked.length}-${i}.mp4`));
        if (res.status === 200) acked.push(String(res.body['id']));
        into?.push({ status: res.status, ms: res.ms });
      }
    };
    await submitSome(5);
    await run('bash', [kafkaCtl, 'stop']);
    await submitSome(3, during);
    await run('bash', [kafkaCtl, 'start']);
    await eventually(
      async () => (await stack.submit('/transcode', job('probe.mp4'))).status === 200,
      90_000,
      'submissions to work again',
    );
    await submitSome(5);
    expect(during.map((d) => d.status)).to.deep.equal([503, 503, 503]);
    // The ingress waits KAFKA_PUBLISH_TIMEOUT_MS (its default here) for an acknowledgement.
    const deadline = loadConfig({}).kafkaPublishTimeoutMs;
    for (const d of during) expect(d.ms, 'a 503 must not hang').to.be.below(deadline + 5000);
    await eventually(
      () => acked.every((id) => files.callbacks.some((c) => c.body['jobId'] === id)),
      200_000,
      'every acknowledged job to end',
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${await whereStuck(acked)}`, { cause: error });
    });
    for (const id of acked)
      expect(
        files.callbacks.filter((c) => c.body['jobId'] === id && c.body['status'] === 'succeeded'),
        id,
      ).to.have.length(1);
  });
}

/** The jobs not called back, with their state, and what the services logged as a problem. */
async function whereStuck(ids: readonly string[]): Promise<string> {
  const open = ids.filter((id) => !files.callbacks.some((c) => c.body['jobId'] === id));
  const states = await Promise.all(
    open.map(async (id) => {
      const s = await stack.status(id).catch((e: unknown) => ({ error: String(e) }));
      return `${id}: ${JSON.stringify(s).slice(0, 300)}`;
    }),
  );
  const processes = [
    ...stack.ingresses.map((i) => ['ingress', i.process] as const),
    ...Object.entries(stack.workers).flatMap(([name, ps]) => ps.map((p) => [name, p] as const)),
  ];
  const problem = (r: Record<string, unknown>): boolean =>
    (r['level'] === 'warn' || r['level'] === 'error') &&
    (r['msg'] !== 'kafka.client_log' || /^(Crash|Restarting)/.test(String(r['kafkaMessage'])));
  const problems = processes.flatMap(([name, p]) =>
    p.logs
      .filter(problem)
      .map((r) =>
        [name, r['time'], r['msg'], r['groupId'] ?? '', r['kafkaMessage'] ?? '', r['error'] ?? '']
          .map((v) => (typeof v === 'string' ? v : JSON.stringify(v)).slice(0, 200))
          .join(' '),
      ),
  );
  return [`not called back:`, ...states, `problems logged:`, ...problems.slice(-40)].join('\n');
}
