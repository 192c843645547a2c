import { createKafkaBus, type KafkaBus } from '../../services/core/bus/kafka-bus.ts';
import type { Subscription } from '../../services/core/bus/event-bus.ts';
import { createLogger } from '../../services/core/observability/logger.ts';
import {
  TOPIC,
  oneKeyStaysInOrder,
  otherOrgTakesFirstFreeSlot,
  shortJobSlotTakesNextAtOnce,
  type ScenarioBus,
} from '../support/fair-scenarios.ts';
import { brokers, newGroup, newPrefix, until } from '../support/kafka-test-names.ts';

// The same scenarios as the embedded bus, on the real broker. One partition: the worst case
// for a consumer that reads in log order, since every record queues behind the one before.
describe('Kafka bus: fair scheduling (real broker)', function () {
  this.timeout(90_000);
  let bus: KafkaBus;
  let subs: Subscription[];
  const logLines: string[] = [];
  beforeEach(() => {
    bus = createKafkaBus({
      brokers: brokers(),
      clientId: 'kafka-fair-test',
      topicPrefix: newPrefix(),
      numPartitions: 1,
      maxWaitTimeMs: 200,
      logger: createLogger({ level: 'warn', write: (line) => logLines.push(line) }),
    });
    subs = [];
  });
  afterEach(async function () {
    await Promise.all(subs.map((s) => s.close(0)));
    await bus.close();
    if (this.currentTest?.state === 'failed') console.error(logLines.slice(-40).join('\n'));
    logLines.length = 0;
  });

  const scenario = (): ScenarioBus => ({
    bus,
    async subscribe(options) {
      subs.push(await bus.subscribe({ ...options, group: newGroup(), topics: [TOPIC] }));
    },
    until: (check, ms, what) => until(check, ms, what),
  });

  it("another organisation's job takes the first slot that frees, ahead of a backlog in the same partition", () =>
    otherOrgTakesFirstFreeSlot(scenario()));

  it('a short job’s slot takes the next record at once while a long one of the same fetch runs', () =>
    shortJobSlotTakesNextAtOnce(scenario()));

  it('records of one job id start one after another, in order', () =>
    oneKeyStaysInOrder(scenario()));
});
