// Readiness probe for the test Kafka broker: succeeds once an admin client's
// describeCluster() answers (an open port alone is not enough), and, when NODE_IDS (comma-
// separated) are given, each broker of BROKERS asked on its own lists each of those brokers (a
// restarted cluster node is listed once the controller has unfenced it, and a node that has
// just started lists the others only once it has caught up: a service that asked it then counted
// one broker and made its topics with one replica).
// Usage: node kafka-ready.ts BROKERS PIDS TIMEOUT_SECONDS [NODE_IDS]
// Exit codes: 0 ready, 1 timed out, 2 a broker process (of PIDS, comma-separated) is gone.
import kafkajs from 'kafkajs';

const { Kafka, logLevel } = kafkajs;

const [brokersArg, pidArg, timeoutArg, idsArg] = process.argv.slice(2);
if (brokersArg === undefined || pidArg === undefined || timeoutArg === undefined) {
  console.error('usage: node kafka-ready.ts BROKERS PIDS TIMEOUT_SECONDS [NODE_IDS]');
  process.exit(64);
}
const brokers = brokersArg.split(',');
const pids = pidArg.split(',').map(Number);
const nodeIds = idsArg ? idsArg.split(',').map(Number) : [];
const deadline = Date.now() + Number(timeoutArg) * 1000;

function alive(p: number): boolean {
  try {
    process.kill(p, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function probe(): Promise<boolean> {
  if (nodeIds.length === 0) return probeOne(brokers);
  for (const broker of brokers) if (!(await probeOne([broker]))) return false;
  return true;
}

async function probeOne(bootstrap: string[]): Promise<boolean> {
  const kafka = new Kafka({
    clientId: 'test-services-ready',
    brokers: bootstrap,
    connectionTimeout: 1000,
    requestTimeout: 3000,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    const listed = new Set(cluster.brokers.map((b) => b.nodeId));
    return (
      cluster.brokers.length > 0 &&
      cluster.controller !== null &&
      nodeIds.every((id) => listed.has(id))
    );
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function main(): Promise<number> {
  for (;;) {
    if (!pids.every(alive)) return 2;
    if (await probe()) return 0;
    if (Date.now() > deadline) return 1;
    await sleep(250);
  }
}

process.exit(await main());
