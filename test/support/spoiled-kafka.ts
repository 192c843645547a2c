import type { Consumer, ConsumerConfig, Kafka } from 'kafkajs';

/** How the first consumer a spoiled client makes goes wrong. */
export type Spoil = 'never fetches' | 'crashes, not restarted';

/**
 * `kafka`, except that the first consumer it makes is spoiled: it runs without ever joining or
 * fetching (as consumers stuck after a broker's restart did on CI), or it crashes at once and
 * kafkajs gives it up. The consumers made after it are sound.
 */
export function spoiledKafka(kafka: Kafka, spoil: Spoil): Kafka {
  let made = 0;
  return new Proxy(kafka, {
    get(target, name, receiver) {
      if (name !== 'consumer') return Reflect.get(target, name, receiver) as unknown;
      return (config: ConsumerConfig): Consumer => {
        const consumer = target.consumer(config);
        if (made++ > 0) return consumer;
        if (spoil === 'never fetches')
          return Object.assign(consumer, { run: () => Promise.resolve() });
        const crashed: ((event: { payload: unknown }) => void)[] = [];
        const on = consumer.on.bind(consumer) as (e: string, l: unknown) => () => void;
        return Object.assign(consumer, {
          on: (event: string, listener: (event: { payload: unknown }) => void) => {
            if (event === consumer.events.CRASH) crashed.push(listener);
            return on(event, listener);
          },
          run: async () => {
            for (const listener of crashed)
              listener({ payload: { error: new Error('spoiled'), groupId: '', restart: false } });
          },
        });
      };
    },
  });
}
