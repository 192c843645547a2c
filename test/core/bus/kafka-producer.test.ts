import { expect } from 'chai';
import type { ProducerBatch } from 'kafkajs';
import { BusUncertainError, BusUnavailableError } from '../../../services/core/bus/event-bus.ts';
import {
  createProducerSlot,
  type ProducerFactory,
  type SlotProducer,
} from '../../../services/core/bus/kafka-producer.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';

/** A producer whose connect and sends settle when the test says so. */
interface FakeProducer extends SlotProducer {
  sent: ProducerBatch[];
  finishConnect(): void;
  failSends: boolean;
}

function fakeKafka(options: { connectWaits?: boolean } = {}): {
  kafka: ProducerFactory;
  producers: FakeProducer[];
} {
  const producers: FakeProducer[] = [];
  const kafka: ProducerFactory = {
    producer: () => {
      let finishConnect = (): void => {};
      const connected = options.connectWaits
        ? new Promise<void>((resolve) => (finishConnect = resolve))
        : Promise.resolve();
      const producer: FakeProducer = {
        sent: [],
        failSends: false,
        finishConnect: () => finishConnect(),
        connect: () => connected,
        disconnect: async () => {},
        sendBatch: async (batch) => {
          producer.sent.push(batch);
          if (producer.failSends) throw new Error('Request timed out');
        },
      };
      producers.push(producer);
      return producer;
    },
  };
  return { kafka, producers };
}

const batch = [{ topic: 'jobs', messages: [{ key: 'a', value: 'x' }] }];

describe('Kafka producer slot: what a failed publish may have written', () => {
  it('a send handed to the producer that fails is uncertain (the records may be written)', async () => {
    const { kafka, producers } = fakeKafka();
    const slot = createProducerSlot(kafka, silentLogger, 1000);
    await slot.connect(Date.now() + 1000);
    const [producer] = producers;
    if (!producer) throw new Error('no producer made');
    producer.failSends = true;
    const error: unknown = await slot.send(batch, Date.now() + 1000).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(BusUncertainError);
    expect(producer.sent).to.have.length(1);
  });

  it('a connect that outlasts the deadline: certainly not queued, and nothing is sent after it', async () => {
    const { kafka, producers } = fakeKafka({ connectWaits: true });
    const slot = createProducerSlot(kafka, silentLogger, 1000);
    const error: unknown = await slot.send(batch, Date.now() + 50).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(BusUnavailableError);
    expect(error).to.not.be.instanceOf(BusUncertainError);
    // The connect comes through after the caller heard "nothing was queued".
    producers[0]?.finishConnect();
    await new Promise((resolve) => setImmediate(resolve));
    expect(producers[0]?.sent).to.deep.equal([]);
  });

  it('after a failed publish, a producer that connects is not healthy until a publish or a probe succeeds', async () => {
    const { kafka, producers } = fakeKafka();
    const slot = createProducerSlot(kafka, silentLogger, 1000);
    await slot.connect(Date.now() + 1000);
    expect(slot.healthy()).to.equal(true);
    const first = producers[0];
    if (first) first.failSends = true;
    await slot.send(batch, Date.now() + 1000).catch(() => undefined);
    expect(slot.failedTopics()).to.deep.equal(['jobs']);
    await slot.connect(Date.now() + 1000);
    expect(slot.healthy(), 'connected again, no publish through yet').to.equal(false);
    slot.recovered();
    expect(slot.healthy()).to.equal(true);

    const second = producers[1];
    if (second) second.failSends = true;
    await slot.send(batch, Date.now() + 1000).catch(() => undefined);
    await slot.connect(Date.now() + 1000);
    expect(slot.healthy()).to.equal(false);
    await slot.send(batch, Date.now() + 1000);
    expect(slot.healthy()).to.equal(true);
    expect(slot.failedTopics()).to.deep.equal([]);
  });
});
