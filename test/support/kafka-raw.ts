import kafkajs from 'kafkajs';

const { Kafka, logLevel } = kafkajs;

/**
 * Reads the records of a topic as raw bytes, as an outside observer of the broker would: until
 * `minRecords` are read, or, with `toEnd`, until every partition is read up to the end it had
 * when the read began (or until `timeoutMs`, returning what was read).
 */
export async function readTopic(
  brokers: string,
  topic: string,
  options: { minRecords?: number; toEnd?: boolean; timeoutMs: number },
): Promise<{ key: string; value: Buffer; headers: Record<string, string> }[]> {
  const kafka = new Kafka({
    clientId: 'test-reader',
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
  });
  const ends = options.toEnd ? await topicEnds(brokers, topic) : new Map<number, bigint>();
  const read = new Map<number, bigint>();
  const consumer = kafka.consumer({ groupId: `reader-${Math.random().toString(16).slice(2)}` });
  const out: { key: string; value: Buffer; headers: Record<string, string> }[] = [];
  const done = (): boolean =>
    out.length >= (options.minRecords ?? 0) &&
    [...ends].every(([partition, end]) => (read.get(partition) ?? 0n) >= end);
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(v);
        out.push({
          key: message.key?.toString() ?? '',
          value: message.value ?? Buffer.alloc(0),
          headers,
        });
        read.set(partition, BigInt(message.offset) + 1n);
      },
    });
    const end = Date.now() + options.timeoutMs;
    while (!done() && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
    return out;
  } finally {
    await consumer.disconnect();
  }
}

/** Each partition's end (the offset its next record will take); empty ones left out. */
async function topicEnds(brokers: string, topic: string): Promise<Map<number, bigint>> {
  const offsets = await withAdmin(brokers.split(','), (admin) => admin.fetchTopicOffsets(topic));
  return new Map(
    offsets
      .filter((o) => BigInt(o.high) > BigInt(o.low))
      .map((o) => [o.partition, BigInt(o.high)] as const),
  );
}

/** Writes raw bytes to a topic (a poison message, or another system's event). */
export async function produceRaw(
  brokers: string,
  topic: string,
  key: string,
  value: Buffer | string,
  headers?: Record<string, string>,
): Promise<void> {
  const kafka = new Kafka({
    clientId: 'test-writer',
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({
      topic,
      acks: -1,
      messages: [{ key, value, ...(headers ? { headers } : {}) }],
    });
  } finally {
    await producer.disconnect();
  }
}

/** Runs `work` with a connected admin client of the brokers, disconnected afterwards. */
export async function withAdmin<T>(
  brokers: readonly string[],
  work: (admin: kafkajs.Admin) => Promise<T>,
): Promise<T> {
  const admin = new Kafka({
    clientId: 'test-admin',
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.disconnect();
  }
}

/**
 * Deletes every topic whose name starts with `prefix` (a test's own topics), so that a broker
 * restarted later in the run has fewer partitions to load before it answers.
 */
export async function deleteTopicsWithPrefix(
  brokers: readonly string[],
  prefix: string,
): Promise<void> {
  await withAdmin(brokers, async (admin) => {
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (mine.length > 0) await admin.deleteTopics({ topics: mine, timeout: 15_000 });
  });
}

/**
 * `work` (an admin request about topics created a moment ago), again while the broker asked
 * answers "unknown topic or partition": a broker other than the one that created a topic does
 * so until the controller's update reaches it (seen on the three-broker cluster right after the
 * service's ensureTopics).
 */
export async function onceTopicsKnown<T>(work: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      const type = (error as { type?: string }).type;
      if (type !== 'UNKNOWN_TOPIC_OR_PARTITION' || Date.now() > end) throw error;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
