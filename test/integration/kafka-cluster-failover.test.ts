// Issue 28, item 5, drills: the ingress, a transcoder and a notifier on the three-node cluster;
// a broker (the leader of most of the job topic's partitions, then the controller quorum's
// leader) is SIGKILLed while a burst of short transcodes arrives, and restarted 20 s later.
// Every submission answered 200 must succeed.
// Duplicates (a job run twice, a 503 that ran anyway) are counted and printed, not asserted:
// the exactly-once semantics of item 3 are not built yet.
import { expect } from 'chai';
import { join } from 'node:path';
import { topics } from '../../services/core/bus/event-bus.ts';
import { SHORT_CLIP } from '../support/clip-server.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { generateClip } from '../support/generate-clip.ts';
import { transcodeBody } from '../support/job-requests.ts';
import { kafkaCluster, quorumLeader, startKafkaCluster } from '../support/kafka-cluster.ts';
import { withAdmin } from '../support/kafka-raw.ts';
import { eventually, startKafkaStack, type KafkaStack } from '../support/kafka-stack.ts';
import { sleep } from '../support/kafka-test-names.ts';

const BURST = 20;
const KILL_AFTER_ACKS = 6;
const RESTART_AFTER_MS = 20_000;

interface Submission {
  i: number;
  status: number;
  id?: string;
  ms: number;
}

describe('Kafka cluster drills: a broker dies mid-burst', function () {
  this.timeout(420_000);
  let cluster: string[] = [];
  let files: TestServer | undefined;
  let stack: KafkaStack | undefined;
  const uploads = new Map<string, number>();

  before(async () => {
    cluster = await startKafkaCluster();
    files = await startTestServer({
      onUpload: (name) => uploads.set(name, (uploads.get(name) ?? 0) + 1),
    });
    await generateClip(join(files.dir, 'in.mp4'), SHORT_CLIP);
  });

  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  after(async () => {
    await files?.close();
    await kafkaCluster('cluster-stop');
  });

  it("the leader of most of the job topic's partitions: every submission answered 200 succeeds", async () => {
    await drill('job-leader', (prefix) => leaderOfMost(cluster, prefix + topics.transcodeRequests));
  });

  it("the controller quorum's leader: every submission answered 200 succeeds", async () => {
    await drill('quorum-leader', () => quorumLeader());
  });

  /** Runs the burst, kills `victim` after the first acknowledgements, judges and prints the figures. */
  async function drill(
    name: string,
    pickVictim: (prefix: string) => Promise<1 | 2 | 3>,
  ): Promise<void> {
    const server = files;
    if (!server) throw new Error('no file server');
    stack = await startKafkaStack({
      extraEnv: {
        KAFKA_BROKERS: cluster.join(','),
        // One key sends the whole burst.
        RATE_LIMIT_PER_SECOND: '0',
        MAX_ACTIVE_JOBS_PER_ORG: '0',
      },
    });
    const s = stack;
    const victim = await pickVictim(s.prefix);
    const burst = await burstWithKill(name, server, s, victim);
    const { submissions } = burst;

    const acknowledged = submissions.filter((x) => x.status === 200);
    const succeeded = (i: number): boolean =>
      server.callbacks.some((c) => c.path === `/callbacks/ok-${name}-${i}`);
    await eventually(
      () => acknowledged.every((x) => succeeded(x.i)),
      180_000,
      'a success callback for every acknowledged submission',
    );
    // Room for late duplicates (a redelivered job, a second callback) to show.
    await sleep(15_000);
    const figures = figuresOf(name, victim, burst, server, uploads);
    console.log(`      cluster drill: ${JSON.stringify(figures)}`);

    const refused = submissions.filter((x) => x.status !== 200);
    expect(acknowledged.length, 'submissions answered 200').to.be.at.least(KILL_AFTER_ACKS);
    expect(submissions).to.have.length(BURST);
    expect(acknowledged.filter((x) => !succeeded(x.i)).map((x) => x.i)).to.deep.equal([]);
    for (const x of acknowledged) {
      const status = await s.status(x.id ?? '');
      expect(status['status'], `job ${x.i}`).to.equal('succeeded');
    }
    // Every refusal is the documented one, never an error of another kind.
    for (const x of refused) expect(x.status, `submission ${x.i}`).to.equal(503);
  }
});

/** The broker id (1–3, the cluster node) leading most partitions of `topic`. */
async function leaderOfMost(brokers: string[], topic: string): Promise<1 | 2 | 3> {
  const { topics: [meta] = [] } = await withAdmin(brokers, (admin) =>
    admin.fetchTopicMetadata({ topics: [topic] }),
  );
  const counts = new Map<number, number>();
  for (const p of meta?.partitions ?? []) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
  const [leader] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0] ?? [];
  if (leader !== 1 && leader !== 2 && leader !== 3) throw new Error(`no leader for ${topic}`);
  return leader;
}

/** The burst's submissions, and when the broker was killed, ms after the burst began. */
interface Burst {
  submissions: Submission[];
  burstStart: number;
  killedAt: number | undefined;
}

/**
 * Submits the burst (two at a time), SIGKILLs `victim` once KILL_AFTER_ACKS submissions were
 * answered 200 and restarts it RESTART_AFTER_MS later; resolves once it is back.
 */
async function burstWithKill(
  name: string,
  server: TestServer,
  s: KafkaStack,
  victim: 1 | 2 | 3,
): Promise<Burst> {
  const submissions: Submission[] = [];
  let killedAt: number | undefined;
  let restarted: Promise<void> | undefined;
  const kill = async (): Promise<void> => {
    killedAt = performance.now();
    await kafkaCluster('cluster-kill', victim);
    restarted = sleep(RESTART_AFTER_MS).then(async () => {
      await kafkaCluster('cluster-start-node', victim);
    });
  };
  const burstStart = performance.now();
  let next = 0;
  let killing: Promise<void> | undefined;
  const loop = async (): Promise<void> => {
    while (next < BURST) {
      const i = next++;
      const body = transcodeBody(server, 'in.mp4', `out-${name}-${i}.mp4`, {
        successUrl: `${server.url}/callbacks/ok-${name}-${i}`,
        failureUrl: `${server.url}/callbacks/fail-${name}-${i}`,
      });
      const answer = await s.submit('/transcode', body).catch(() => undefined);
      submissions.push({
        i,
        status: answer?.status ?? 0,
        ms: answer?.ms ?? 0,
        ...(typeof answer?.body['id'] === 'string' ? { id: answer.body['id'] } : {}),
      });
      if (submissions.filter((x) => x.status === 200).length >= KILL_AFTER_ACKS) killing ??= kill();
      await sleep(250);
    }
  };
  await Promise.all([loop(), loop()]);
  await killing;
  await restarted;
  return { submissions, burstStart, killedAt };
}

/** The drill's figures, duplicates among them (printed, not asserted: see the top). */
function figuresOf(
  name: string,
  victim: 1 | 2 | 3,
  { submissions, burstStart, killedAt }: Burst,
  server: TestServer,
  uploads: Map<string, number>,
): Record<string, unknown> {
  const callbacksOf = (i: number): number =>
    server.callbacks.filter((c) => c.path.endsWith(`-${name}-${i}`)).length;
  const acknowledged = submissions.filter((x) => x.status === 200);
  const refused = submissions.filter((x) => x.status !== 200);
  return {
    drill: name,
    victim,
    acknowledged: acknowledged.length,
    refused: refused.map((x) => x.status),
    refusedThatRan: refused.filter(
      (x) => callbacksOf(x.i) > 0 || uploads.has(`out-${name}-${x.i}.mp4`),
    ).length,
    jobsCalledBackTwice: acknowledged.filter((x) => callbacksOf(x.i) > 1).length,
    outputsUploadedTwice: [...uploads].filter(
      ([file, n]) => file.startsWith(`out-${name}-`) && n > 1,
    ).length,
    slowestAnswerMs: Math.round(Math.max(...submissions.map((x) => x.ms))),
    answersAfterKillOver5s: submissions.filter((x) => x.ms > 5000).length,
    killedAfterMs: killedAt === undefined ? undefined : Math.round(killedAt - burstStart),
  };
}
