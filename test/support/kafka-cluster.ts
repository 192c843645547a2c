import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { requireEnv } from './kafka-stack.ts';

const run = promisify(execFile);

type ClusterCommand =
  | 'cluster-start'
  | 'cluster-stop'
  | 'cluster-env'
  | 'cluster-kill'
  | 'cluster-start-node'
  | 'cluster-stop-node'
  | 'cluster-quorum-leader';

/**
 * The three-node KRaft cluster of `scripts/test-services/kafka.sh` (TEST_KAFKA_CTL), in the test
 * services' state dir. Not started by start-all.sh: the tests that need it start it (20–60 s)
 * and stop it, so that the rest of the suite does not pay its idle CPU.
 */
export async function kafkaCluster(command: ClusterCommand, node?: 1 | 2 | 3): Promise<string> {
  const args = [
    requireEnv('TEST_KAFKA_CTL'),
    command,
    ...(node === undefined ? [] : [String(node)]),
  ];
  const { stdout } = await run('bash', args, { env: process.env, timeout: 240_000 });
  return stdout;
}

/** The node (1–3) leading the controller quorum now. */
export async function quorumLeader(): Promise<1 | 2 | 3> {
  const id = Number((await kafkaCluster('cluster-quorum-leader')).trim());
  if (id !== 1 && id !== 2 && id !== 3) throw new Error(`no quorum leader (got ${id})`);
  return id;
}

/** Starts the cluster (the nodes not running) and answers its bootstrap list; node N is the Nth address and broker id N. */
export async function startKafkaCluster(): Promise<string[]> {
  await kafkaCluster('cluster-start');
  const line = (await kafkaCluster('cluster-env')).trim();
  const match = /^KAFKA_CLUSTER_BROKERS=(\S+)$/.exec(line);
  if (!match?.[1]) throw new Error(`unexpected cluster-env output: ${line}`);
  return match[1].split(',');
}
