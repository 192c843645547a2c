// Issue 28, item 5, drills: the ingress, a transcoder and a notifier on the three-node cluster;
// a broker (the leader of most of the job topic's partitions, then the controller quorum's
// leader) is SIGKILLed while a burst of short transcodes arrives, and restarted 20 s later; in
// the first, once it is back, a second burst arrives and another broker is SIGKILLed while its
// jobs run (some not yet called back, asserted), and restarted 20 s later too.
// A third drill sets the publish deadline below the failover time (3 s) and kills the broker
// between two parts of its burst, once the ingress is quiet, so that submissions are answered
// 503: at least one `bus_uncertain` is required. In each: every submission answered 200
// runs once (one success callback, its output uploaded once); none answered 503
// `bus_unavailable` runs; one answered `bus_uncertain` is sent again with the same
// Idempotency-Key until answered 200, and then runs once, as the job the 503 named.
import { expect } from 'chai';
import { join } from 'node:path';
import { topics } from '../../services/core/bus/event-bus.ts';
import { SHORT_CLIP } from '../support/clip-server.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { generateClip } from '../support/generate-clip.ts';
import { transcodeBody } from '../support/job-requests.ts';
import { kafkaCluster, quorumLeader, startKafkaCluster } from '../support/kafka-cluster.ts';
import { onceTopicsKnown, readTopic, withAdmin } from '../support/kafka-raw.ts';
import { eventually, startKafkaStack, type KafkaStack } from '../support/kafka-stack.ts';
import { sleep } from '../support/kafka-test-names.ts';
import type { SpawnedService } from '../support/spawn-service.ts';

const BURST = 20;
const KILL_AFTER_ACKS = 6;
const RESTART_AFTER_MS = 20_000;
/** How long a `bus_uncertain` submission is sent again (1 s apart) before it counts as never accepted. */
const RETRY_UNCERTAIN_MS = 90_000;

/** What one answer of the ingress says. */
type Answer = 'accepted' | 'bus_unavailable' | 'bus_uncertain' | `other: ${string}`;

interface Submission {
  i: number;
  /** The first answer, and the last (after the retries of a `bus_uncertain`). */
  first: Answer;
  last: Answer;
  /** The job id: of the 200, or the one a `bus_uncertain` named. */
  id?: string;
  /** Ids the retries were answered with (each must be `id`). */
  retryIds: string[];
  retries: number;
  ms: number;
  startedAt: number;
  answeredAt: number;
}

let cluster: string[] = [];
let files: TestServer | undefined;
let stack: KafkaStack | undefined;
const uploads = new Map<string, number>();

/** What a drill does beyond its burst and the death of its victim. */
interface DrillOptions {
  /** The services' environment beyond the stack's and the cluster's. */
  env?: Record<string, string>;
  /** Once the victim is back, a second burst, and another broker killed while its jobs run. */
  thenAnother?: boolean;
  /**
   * The drill is about 503 `bus_uncertain`: the burst holds once the kill is due, until the
   * ingress has nothing left to publish (`quiet`) and the victim is dead, and at least one
   * submission must be answered `bus_uncertain`.
   */
  uncertain?: boolean;
}

/** Runs the burst, kills `victim` after the first acknowledgements, judges and prints the figures. */
async function drill(
  name: string,
  pickVictim: (prefix: string) => Promise<1 | 2 | 3>,
  { env = {}, thenAnother = false, uncertain = false }: DrillOptions = {},
): Promise<void> {
  const server = files;
  if (!server) throw new Error('no file server');
  stack = await startKafkaStack({
    extraEnv: {
      KAFKA_BROKERS: cluster.join(','),
      // As docs/operating.md tells operators of a cluster: unset, the replication follows the
      // brokers live at the first start, and a node still joining made topics of 2 replicas
      // (then refused by the next service, which counted 3).
      KAFKA_REPLICATION_FACTOR: '3',
      // One key sends the whole burst.
      RATE_LIMIT_PER_SECOND: '0',
      MAX_ACTIVE_JOBS_PER_ORG: '0',
      ...env,
    },
  });
  const s = stack;
  const victim = await pickVictim(s.prefix);
  const seen = seenOf(name, server, uploads);
  const burst = await burstWithKill(
    name,
    server,
    s,
    victim,
    uncertain ? { beforeKill: (sent) => quiet(sent, s) } : {},
  );
  if (thenAnother) {
    const second = ((victim % 3) + 1) as 1 | 2 | 3;
    let running = 0;
    const onKill = (sent: Submission[]): void => {
      running = [...burst.submissions, ...sent].filter(
        (x) => x.last === 'accepted' && seen.callbacks(x.i, 'ok') === 0,
      ).length;
    };
    const more = await burstWithKill(name, server, s, second, { first: BURST, onKill });
    console.log(`      cluster drill: broker ${second} killed with ${running} jobs still to run`);
    expect(running, 'jobs still to run when the second broker dies').to.be.above(0);
    burst.submissions.push(...more.submissions);
  }
  await eventually(
    () => burst.submissions.every((x) => x.last !== 'accepted' || seen.callbacks(x.i, 'ok') > 0),
    180_000,
    'a success callback for every accepted submission',
  ).catch(async (error: unknown) => {
    await printUncalled(burst.submissions, seen, s);
    throw error;
  });
  // Room for late duplicates (a redelivered job, a second callback) to show.
  await sleep(15_000);

  const figures = figuresOf(name, victim, burst, seen);
  const crashes = crashesOf(s);
  console.log(`      cluster drill: ${JSON.stringify({ ...figures, ...crashes })}`);
  printTwice(burst.submissions, seen, s, server);
  expect(burst.submissions).to.have.length(thenAnother ? 2 * BURST : BURST);
  expect(figures.answered200, 'submissions answered 200 at once').to.be.at.least(KILL_AFTER_ACKS);
  // Every refusal is one of the two documented 503s, never an error of another kind.
  expect(figures.other, 'answers other than 200 and the two 503s').to.deep.equal([]);
  if (uncertain)
    expect(figures.bus_uncertain, 'submissions answered 503 bus_uncertain').to.be.at.least(1);
  await expectOnce(burst.submissions, seen, s);
  // Consumers ride the failover out: none runs out of tries on the dead broker (CONSUMER_RECOVERY).
  expect(
    crashes.crashedBy.filter((c) => c.includes('KafkaJSNumberOfRetriesExceeded')),
    'consumers given up after their tries',
  ).to.deep.equal([]);
}

describe('Kafka cluster drills: a broker dies mid-burst', function () {
  this.timeout(480_000);

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

  describesLeaderMostJobTopic();
});

function describesLeaderMostJobTopic(): void {
  it("the leader of most of the job topic's partitions, then another broker while the jobs run: every job answered 200 runs once", async () => {
    await drill(
      'job-leader',
      (prefix) => leaderOfMost(cluster, prefix + topics.transcodeRequests),
      { thenAnother: true },
    );
  });

  it("the controller quorum's leader: every job answered 200 runs once", async () => {
    await drill('quorum-leader', () => quorumLeader());
  });

  it('a publish deadline under the failover time: bus_uncertain comes, and retried, runs once; no bus_unavailable runs', async () => {
    // The bus_uncertain must come in every run, not by luck:
    // - the job topic has one partition, so the victim leads all of it, and every record waits
    //   for the failover: the broker's 9 s session (7 to 9 s after the kill, by when its last
    //   heartbeat came), then an election; a 3 s deadline ends well inside it even for a
    //   submission sent a second or more after the kill;
    // - the burst holds from its 6th 200 until the victim is dead, so that its next
    //   submissions go into the failover whatever the load; and before the kill it waits until
    //   the ingress has nothing left to publish (`quiet`), so that the first of them goes out
    //   on the producer connected before the kill: its record is sent, and its 503 is
    //   bus_uncertain (one queued behind it may get bus_unavailable, its deadline spent).
    // Before (4 partitions, a 5 s deadline, the burst sending on through `cluster-kill`), a run
    // could end its burst before the broker died, or send its records after the kill only to
    // live leaders; and whatever the partitions, a status publish of the jobs running (the
    // ingress's status writer shares the producer) could meet the dead broker first and replace
    // the producer, leaving the submissions bus_unavailable only (seen here with one partition
    // and the hold, before `quiet`: 2 bus_unavailable, no bus_uncertain).
    await drill(
      'short-deadline',
      (prefix) => leaderOfMost(cluster, prefix + topics.transcodeRequests),
      { env: { KAFKA_PUBLISH_TIMEOUT_MS: '3000', KAFKA_PARTITIONS: '1' }, uncertain: true },
    );
  });
}

/** The burst's submissions, and when the broker was killed, ms after the burst began. */
interface Burst {
  submissions: Submission[];
  burstStart: number;
  killedAt: number | undefined;
}

interface BurstOptions {
  /** The number of the burst's first submission (default 0). */
  first?: number;
  /** Told what was sent so far when the kill begins. */
  onKill?: (sent: Submission[]) => void;
  /**
   * Awaited before the kill, with what was sent so far; from then until the victim is dead the
   * burst sends nothing (without it, the burst sends on through the kill).
   */
  beforeKill?: (sent: Submission[]) => Promise<void>;
}

/**
 * Submits the burst (two at a time, numbered from `first`), SIGKILLs `victim` once
 * KILL_AFTER_ACKS of them were answered 200 and restarts it RESTART_AFTER_MS later; resolves
 * once it is back.
 */
async function burstWithKill(
  name: string,
  server: TestServer,
  s: KafkaStack,
  victim: 1 | 2 | 3,
  { first = 0, onKill, beforeKill }: BurstOptions = {},
): Promise<Burst> {
  const submissions: Submission[] = [];
  let killedAt: number | undefined;
  let restarted: Promise<void> | undefined;
  const kill = async (): Promise<void> => {
    await beforeKill?.(submissions);
    onKill?.(submissions);
    killedAt = performance.now();
    await kafkaCluster('cluster-kill', victim);
    restarted = sleep(RESTART_AFTER_MS).then(async () => {
      await kafkaCluster('cluster-start-node', victim);
    });
  };
  const burstStart = performance.now();
  let next = first;
  let killing: Promise<void> | undefined;
  const loop = async (): Promise<void> => {
    while (next < first + BURST) {
      submissions.push(await submitOne(name, next++, server, s));
      if (submissions.filter((x) => x.first === 'accepted').length >= KILL_AFTER_ACKS)
        killing ??= kill();
      if (beforeKill) await killing;
      await sleep(250);
    }
  };
  await Promise.all([loop(), loop()]);
  await killing;
  await restarted;
  return { submissions, burstStart, killedAt };
}

/**
 * Waits until the ingress has nothing left to publish for the jobs answered 200 so far: each
 * called back, and its last state (succeeded, callback delivered) on the status topic. Its status
 * writer publishes through the submissions' producer: a status publish failing on the dead
 * broker ahead of the next submission would replace the producer and leave that submission to a
 * new one still connecting, and its 503 would be bus_unavailable (nothing sent), not uncertain.
 */
async function quiet(sent: Submission[], s: KafkaStack): Promise<void> {
  const accepted = sent.filter((x) => x.last === 'accepted');
  type State = { status?: unknown; callback?: { state?: unknown } };
  const done = (state: State): boolean =>
    state.status === 'succeeded' && state.callback?.state === 'delivered';
  await eventually(
    async () => {
      for (const x of accepted) if (!done(await s.status(x.id ?? ''))) return false;
      return true;
    },
    120_000,
    'the jobs sent before the kill called back',
  );
  await eventually(
    async () => {
      const records = await readTopic(cluster.join(','), s.prefix + topics.jobStatus, {
        toEnd: true,
        timeoutMs: 30_000,
      });
      const last = new Map(records.map((r) => [r.key, r.value.toString()]));
      return accepted.every((x) => done(JSON.parse(last.get(x.id ?? '') ?? '{}') as State));
    },
    60_000,
    'the states of the jobs sent before the kill written',
  );
}

/**
 * One submission with its own Idempotency-Key; one answered `bus_uncertain` is sent again, as a
 * caller told "it may have been queued" does (the same request, the same key), until a 200.
 */
async function submitOne(
  name: string,
  i: number,
  server: TestServer,
  s: KafkaStack,
): Promise<Submission> {
  const body = transcodeBody(server, 'in.mp4', `out-${name}-${i}.mp4`, {
    successUrl: `${server.url}/callbacks/ok-${name}-${i}`,
    failureUrl: `${server.url}/callbacks/fail-${name}-${i}`,
  });
  const send = () =>
    s
      .submit('/transcode', body, 0, { 'idempotency-key': `${s.prefix}${name}-${i}` })
      .catch(() => undefined);
  const startedAt = performance.now();
  const answer = await send();
  const first = answerOf(answer);
  const id = idOf(answer);
  const submission: Submission = {
    i,
    first,
    last: first,
    ...(id === undefined ? {} : { id }),
    retryIds: [],
    retries: 0,
    ms: answer?.ms ?? 0,
    startedAt,
    answeredAt: performance.now(),
  };
  const until = performance.now() + RETRY_UNCERTAIN_MS;
  while (first === 'bus_uncertain' && submission.last !== 'accepted' && performance.now() < until) {
    await sleep(1000);
    const again = await send();
    submission.retries += 1;
    submission.last = answerOf(again);
    const againId = idOf(again);
    if (againId !== undefined) submission.retryIds.push(againId);
  }
  return submission;
}

type Answered = { status: number; body: Record<string, unknown> } | undefined;

function answerOf(answer: Answered): Answer {
  if (!answer) return 'other: no answer';
  if (answer.status === 200) return 'accepted';
  const message = String(answer.body['error']);
  if (answer.status === 503 && typeof answer.body['jobId'] === 'string') return 'bus_uncertain';
  if (answer.status === 503 && message.includes('nothing was queued')) return 'bus_unavailable';
  return `other: ${answer.status} ${message}`;
}

/** The id of a 200, or the job a `bus_uncertain` names. */
function idOf(answer: Answered): string | undefined {
  const id = answer?.body['id'] ?? answer?.body['jobId'];
  return typeof id === 'string' ? id : undefined;
}

/** What the file server saw of submission `i`: its callbacks and the uploads of its output. */
interface Seen {
  callbacks(i: number, kind: 'ok' | 'fail'): number;
  uploads(i: number): number;
}

function seenOf(name: string, server: TestServer, uploads: Map<string, number>): Seen {
  return {
    callbacks: (i, kind) =>
      server.callbacks.filter((c) => c.path === `/callbacks/${kind}-${name}-${i}`).length,
    uploads: (i) => uploads.get(`out-${name}-${i}.mp4`) ?? 0,
  };
}

/** The drill's figures: the answers by kind, the duplicates, and how long submissions waited. */
function figuresOf(name: string, victim: 1 | 2 | 3, burst: Burst, seen: Seen) {
  const { submissions, burstStart, killedAt } = burst;
  const count = (answer: Answer): number => submissions.filter((x) => x.first === answer).length;
  const refused = submissions.filter((x) => x.first !== 'accepted');
  const lastRefusal = Math.max(...refused.map((x) => x.answeredAt));
  const acceptedAgain = submissions
    .filter((x) => x.first === 'accepted' && x.startedAt > lastRefusal)
    .map((x) => x.answeredAt);
  return {
    drill: name,
    victim,
    submissions: submissions.length,
    answered200: count('accepted'),
    bus_unavailable: count('bus_unavailable'),
    bus_uncertain: count('bus_uncertain'),
    other: submissions.filter((x) => x.first.startsWith('other')).map((x) => x.first),
    uncertainAcceptedOnRetry: submissions.filter(
      (x) => x.first === 'bus_uncertain' && x.last === 'accepted',
    ).length,
    retries: submissions.reduce((n, x) => n + x.retries, 0),
    jobsCalledBackTwice: submissions.filter((x) => seen.callbacks(x.i, 'ok') > 1).length,
    outputsUploadedTwice: submissions.filter((x) => seen.uploads(x.i) > 1).length,
    unavailableThatRan: submissions.filter(
      (x) =>
        x.first === 'bus_unavailable' && (seen.callbacks(x.i, 'ok') > 0 || seen.uploads(x.i) > 0),
    ).length,
    slowestAnswerMs: Math.round(Math.max(...submissions.map((x) => x.ms))),
    answersOver5s: submissions.filter((x) => x.ms > 5000).length,
    killedAfterMs: killedAt === undefined ? undefined : Math.round(killedAt - burstStart),
    acceptedAgainAfterKillMs:
      refused.length === 0 || killedAt === undefined || acceptedAgain.length === 0
        ? undefined
        : Math.round(Math.min(...acceptedAgain) - killedAt),
  };
}

/** The stack's processes: its ingresses, transcoders and notifiers. */
function servicesOf(s: KafkaStack): SpawnedService[] {
  return [...s.ingresses.map((x) => x.process), ...s.workers.transcoder, ...s.workers.notifier];
}

/**
 * How often a consumer of the stack gave up retrying and was restarted by kafkajs (each time its
 * running handlers are aborted and its group rebalances), and how often it stayed down.
 */
function crashesOf(s: KafkaStack): {
  consumerCrashes: number;
  consumersDown: number;
  crashedBy: string[];
} {
  const crashes = servicesOf(s)
    .flatMap((p) => p.logs)
    .filter((l) => l['msg'] === 'kafka.consumer_crashed');
  return {
    consumerCrashes: crashes.length,
    consumersDown: crashes.filter((l) => l['restart'] === false).length,
    crashedBy: crashes.map((l) => `${String(l['group'])}: ${causeOf(l['error'])}`),
  };
}

/** A logged error's type, and its cause's (a given-up consumer's last error). */
function causeOf(error: unknown): string {
  const e = (error ?? {}) as { type?: unknown; cause?: { type?: unknown } };
  return e.cause ? `${String(e.type)} of ${String(e.cause.type)}` : String(e.type);
}

/** What the services logged of a job run or called back twice, to find out why. */
function printTwice(
  submissions: Submission[],
  seen: Seen,
  s: KafkaStack,
  server: TestServer,
): void {
  const twice = submissions.filter((y) => seen.callbacks(y.i, 'ok') > 1 || seen.uploads(y.i) > 1);
  for (const x of twice) {
    for (const c of server.callbacks.filter((y) => y.path.endsWith(`-${x.i}`)))
      console.log(
        `      job ${x.i} called back: ${JSON.stringify({ headers: c.headers, body: c.body })}`,
      );
    for (const p of [...s.workers.transcoder, ...s.workers.notifier])
      for (const r of p.logs.filter((l) => l['jobId'] === x.id && l['level'] !== 'debug'))
        console.log(`      job ${x.i}: ${JSON.stringify(r)}`);
  }
  if (twice.length > 0) printWarnings(s);
}

/**
 * The warnings and errors the stack's services logged, one line per kind (service, message,
 * group, error) with its count and first time: short enough to read in a CI log's tail.
 */
function printWarnings(s: KafkaStack): void {
  const services = servicesOf(s);
  const kinds = new Map<string, { first: unknown; count: number }>();
  for (const p of services)
    for (const l of p.logs) {
      if (!['warn', 'error', 'fatal'].includes(String(l['level'])) && l['msg'] !== 'unparsed')
        continue;
      if (l['kafkaNamespace'] === 'Connection') continue;
      const error = l['error'] as { type?: string; message?: string } | string | undefined;
      const kind = [
        l['service'],
        l['msg'],
        l['group'] ?? l['groupId'],
        l['restart'],
        typeof l['kafkaMessage'] === 'string' ? l['kafkaMessage'].replace(/\d+/g, 'N') : '',
        typeof error === 'object' ? `${error.type}: ${error.message}` : error,
      ]
        .filter((x) => x !== undefined && x !== '')
        .join(' | ');
      const known = kinds.get(kind);
      if (known) known.count += 1;
      else kinds.set(kind, { first: l['time'], count: 1 });
    }
  for (const [kind, { first, count }] of kinds)
    console.log(`      log ×${count} from ${String(first)}: ${kind.slice(0, 300)}`);
}

/**
 * Why accepted jobs were not called back: each one's status and what the services logged of it,
 * then every warning and error the services logged.
 */
async function printUncalled(submissions: Submission[], seen: Seen, s: KafkaStack): Promise<void> {
  const services = servicesOf(s);
  for (const x of submissions.filter(
    (y) => y.last === 'accepted' && seen.callbacks(y.i, 'ok') === 0,
  )) {
    const status = await s.status(x.id ?? '').catch((error: unknown) => ({ error: String(error) }));
    console.log(`      job ${x.i} (${x.id}) not called back: ${JSON.stringify(status)}`);
    for (const p of services)
      for (const r of p.logs.filter((l) => l['jobId'] === x.id && l['level'] !== 'debug'))
        console.log(`      job ${x.i}: ${JSON.stringify(r)}`);
  }
  printWarnings(s);
}

/**
 * Once: a job answered 200 (at once or on a retry) is called back once with success and its
 * output uploaded once; a `bus_uncertain` job is answered 200 on a retry, as the job the 503
 * named, and runs once (none is lost); a `bus_unavailable` one never runs.
 */
async function expectOnce(submissions: Submission[], seen: Seen, s: KafkaStack): Promise<void> {
  for (const x of submissions.filter((y) => y.last === 'accepted')) {
    expect(seen.callbacks(x.i, 'ok'), `success callbacks of job ${x.i}`).to.equal(1);
    expect(seen.callbacks(x.i, 'fail'), `failure callbacks of job ${x.i}`).to.equal(0);
    expect(seen.uploads(x.i), `uploads of job ${x.i}'s output`).to.equal(1);
    // The status is written by the ingress's status writer, whose consumer may still be catching
    // up after the broker's death (a restart after being given up): latency, within a bound.
    await eventually(
      async () => (await s.status(x.id ?? ''))['status'] === 'succeeded',
      30_000,
      `job ${x.i}'s status`,
    ).catch(() => undefined);
    const status = await s.status(x.id ?? '');
    if (status['status'] !== 'succeeded') {
      console.log(`      job ${x.i} status ${JSON.stringify(status)}`);
      for (const p of servicesOf(s))
        for (const r of p.logs.filter(
          (l) => l['jobId'] === x.id || String(l['msg']).startsWith('kafka.'),
        ))
          console.log(
            `      job ${x.i}: ${JSON.stringify({ ...r, stack: undefined }).slice(0, 600)}`,
          );
      const records = await readTopic(cluster.join(','), s.prefix + topics.jobStatus, {
        toEnd: true,
        timeoutMs: 30_000,
      });
      for (const r of records.filter((y) => y.key === x.id))
        console.log(`      job ${x.i} status record: ${r.value.toString().slice(0, 300)}`);
    }
    expect(status['status'], `job ${x.i}`).to.equal('succeeded');
  }
  for (const x of submissions.filter((y) => y.first === 'bus_uncertain')) {
    // A caller retrying as told gets its job through: the cluster is back well within the
    // RETRY_UNCERTAIN_MS of retries.
    expect(x.last, `job ${x.i}'s answer after ${x.retries} retries`).to.equal('accepted');
    // A retry with the same key is the job the 503 named, never a second one.
    expect(x.retryIds, `ids of job ${x.i}'s retries`).to.include(x.id);
    expect(
      x.retryIds.filter((id) => id !== x.id),
      `ids of job ${x.i}'s retries`,
    ).to.deep.equal([]);
    expect(seen.callbacks(x.i, 'ok'), `success callbacks of job ${x.i}`).to.equal(1);
    expect(seen.callbacks(x.i, 'fail'), `failure callbacks of job ${x.i}`).to.equal(0);
    expect(seen.uploads(x.i), `uploads of job ${x.i}'s output`).to.equal(1);
  }
  for (const x of submissions.filter((y) => y.first === 'bus_unavailable')) {
    const callbacks = seen.callbacks(x.i, 'ok') + seen.callbacks(x.i, 'fail');
    expect(callbacks, `callbacks of job ${x.i}`).to.equal(0);
    expect(seen.uploads(x.i), `uploads of job ${x.i}'s output`).to.equal(0);
  }
}

/** The broker id (1–3, the cluster node) leading most partitions of `topic`. */
async function leaderOfMost(brokers: string[], topic: string): Promise<1 | 2 | 3> {
  const { topics: [meta] = [] } = await withAdmin(brokers, (admin) =>
    onceTopicsKnown(() => admin.fetchTopicMetadata({ topics: [topic] })),
  );
  const counts = new Map<number, number>();
  for (const p of meta?.partitions ?? []) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
  const [leader] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0] ?? [];
  if (leader !== 1 && leader !== 2 && leader !== 3) throw new Error(`no leader for ${topic}`);
  return leader;
}
