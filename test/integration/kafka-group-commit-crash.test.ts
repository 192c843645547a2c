import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { topics } from '../../services/core/bus/event-bus.ts';
import { readTopic } from '../support/kafka-raw.ts';
import { newPrefix } from '../support/kafka-test-names.ts';
import { requireEnv } from '../support/kafka-stack.ts';
import { freePort, spawnService, type SpawnedService } from '../support/spawn-service.ts';
import { burstThenKill } from '../support/submission-burst.ts';
import { H264_MP4 } from '../support/job-requests.ts';

const KEY = 'group-commit-key-0123456789';
const main = new URL('../../services/ingress/main.ts', import.meta.url).pathname;

describe('Kafka: the ingress batches sends and keeps the acknowledgement', function () {
  this.timeout(180_000);
  let service: SpawnedService | undefined;
  after(() => service?.kill());

  it('every submission acknowledged before the ingress is SIGKILLed mid-burst is on the topic', async () => {
    const brokers = requireEnv('TEST_KAFKA_BROKERS');
    const prefix = newPrefix();
    const port = await freePort();
    service = spawnService(main, {
      PORT: String(port),
      API_KEYS: `${KEY}:org-g`,
      // One key sends the whole burst: the per-key rate and per-org caps would answer 429.
      RATE_LIMIT_PER_SECOND: '0',
      MAX_ACTIVE_JOBS_PER_ORG: '0',
      CREDENTIALS_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      KAFKA_BROKERS: brokers,
      KAFKA_TOPIC_PREFIX: prefix,
      LOG_LEVEL: 'info',
    });
    await service.waitForLog((r) => r['msg'] === 'ingress.listening', 60_000);
    const acknowledged = await burstThenKill(
      service,
      `http://127.0.0.1:${port}`,
      {
        apiKey: KEY,
        inputUrl: 'https://media.example.com/in.mp4',
        outputUrl: 'https://media.example.com/out.mp4',
        ...H264_MP4,
      },
      { total: 600, connections: 32, killAfter: 300 },
    );
    expect(acknowledged.length).to.be.at.least(300);
    expect(service.child.signalCode).to.equal('SIGKILL');

    const records = await readTopic(brokers, prefix + topics.transcodeRequests, {
      minRecords: acknowledged.length,
      timeoutMs: 60_000,
    });
    const onTopic = new Set(records.map((r) => r.key));
    expect(acknowledged.filter((id) => !onTopic.has(id))).to.deep.equal([]);
  });
});
