import { createKafkaBus } from '../../services/core/bus/kafka-bus.ts';
import { createLogger } from '../../services/core/observability/logger.ts';
import { eventBusConformance } from '../support/event-bus-conformance.ts';
import { deleteTopicsWithPrefix } from '../support/kafka-raw.ts';
import { brokers, newPrefix } from '../support/kafka-test-names.ts';

// The Kafka bus against the EventBus conformance suite, on the real broker
// (scripts/test-services/start-all.sh). Each case has a topic prefix of its own; a restart, or
// a second member, is another bus on the same prefix. Never skipped: a missing broker fails.
eventBusConformance('Kafka bus (real broker)', { movesWaitingRecords: true }, () => {
  const list = brokers();
  let lines: string[] = [];
  return {
    async newPlace({ redeliveryDelayMs }) {
      lines = [];
      const topicPrefix = newPrefix();
      return {
        open: () =>
          createKafkaBus({
            brokers: list,
            clientId: 'kafka-bus-conformance',
            topicPrefix,
            // A few partitions, so that keys share some and not others; not the default 12, since
            // every case makes its own topics and a broker restarted later (kafka-bus.test.ts)
            // reloads every partition it holds before it answers.
            numPartitions: 3,
            // The first publish of a case waits for its new topics' leaders; on a busy machine
            // that takes longer than the default 5 s, which is not what the suite checks.
            publishTimeoutMs: 15_000,
            logger: createLogger({ level: 'warn', write: (line) => lines.push(line) }),
            maxWaitTimeMs: 200,
            sessionTimeoutMs: 6000,
            redeliveryDelayMs,
          }),
        remove: () => deleteTopicsWithPrefix(list, topicPrefix),
      };
    },
    deliveryMs: 20_000,
    quietMs: 1000,
    logs: () => lines,
  };
});
