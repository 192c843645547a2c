import { createKafkaBus } from '../../services/core/bus/kafka-bus.ts';
import { createLogger } from '../../services/core/observability/logger.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { brokers, newPrefix } from '../support/kafka-test-names.ts';
import { onceAcrossRestart } from '../notifier/notifier-fixture.ts';

// The notifier's dedupe outlives the process: a new notifier instance on the same topics knows
// the callbacks settled before it, from the callback-status events (job-outcomes.ts).

describe('Kafka: the notifier delivers each terminal event once across a restart', function () {
  this.timeout(240_000);
  let files: TestServer;
  let logLines: string[] = [];

  beforeEach(async () => {
    files = await startTestServer();
  });
  afterEach(async function () {
    await files.close();
    if (this.currentTest?.state === 'failed') console.error(logLines.slice(-60).join('\n'));
    logLines = [];
  });

  const options = {
    concurrency: 4,
    maxInFlightPerHost: 2,
    timeoutMs: 5000,
    policy: { backoffMs: 100, backoffMaxMs: 1000, horizonMs: 60_000 },
  };
  const busesOn = (prefix: string) => () =>
    createKafkaBus({
      brokers: brokers(),
      clientId: 'kafka-notifier-once-test',
      topicPrefix: prefix,
      logger: createLogger({ level: 'warn', write: (line) => logLines.push(line) }),
      maxWaitTimeMs: 200,
      sessionTimeoutMs: 6000,
    });

  it('the same event or delivery record after a restart makes no second callback; a redelivery does', async () => {
    await onceAcrossRestart(busesOn(newPrefix()), files, options);
  });

  it('the same, read by another instance that took the partitions over (a rebalance)', async () => {
    await onceAcrossRestart(busesOn(newPrefix()), files, options, { handOver: true });
  });
});
