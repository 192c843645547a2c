import { expect } from 'chai';
import type { TopicMessages } from 'kafkajs';
import { createGroupCommit } from '../../../services/core/bus/group-commit.ts';
import {
  createBatchingSender,
  type PendingMessage,
  type ProducerSlot,
} from '../../../services/core/bus/kafka-producer.ts';

const settle = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'ok',
    (e: unknown) => (e as Error).message,
  );

/** A group commit whose first write waits until `release` is called; every write is recorded. */
function heldFirstWrite(): {
  commits: ReturnType<typeof createGroupCommit<number>>;
  writes: number[][];
  release: () => void;
} {
  const writes: number[][] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const commits = createGroupCommit<number>({
    write: async (items) => {
      writes.push(items);
      if (writes.length === 1) await gate;
    },
  });
  return { commits, writes, release };
}

describe('group commit', () => {
  it('concurrent adds share one write, and each resolves only after it', async () => {
    const { commits, writes, release } = heldFirstWrite();
    let resolved = 0;
    const adds = [1, 2, 3].map((n) => commits.add([n]).then(() => (resolved += 1)));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(writes).to.deep.equal([[1, 2, 3]]);
    expect(resolved, 'nothing is acknowledged before the write ends').to.equal(0);
    // What arrives while the write is out goes in the next one, after it.
    const later = commits.add([4, 5]);
    release();
    await Promise.all([...adds, later]);
    expect(writes).to.deep.equal([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('adds of several turns made while a write is out all go in the one write after it', async () => {
    const { commits, writes, release } = heldFirstWrite();
    const first = commits.add([1]);
    await new Promise((r) => setImmediate(r));
    const later: Promise<void>[] = [];
    for (const n of [2, 3, 4]) {
      later.push(commits.add([n]));
      // Each in its own event-loop turn: a batch sealed per turn would make three writes.
      await new Promise((r) => setImmediate(r));
    }
    expect(writes).to.deep.equal([[1]]);
    release();
    await Promise.all([first, ...later]);
    expect(writes).to.deep.equal([[1], [2, 3, 4]]);
  });

  it('drain writes what waits and resolves once every write has settled', async () => {
    const writes: number[][] = [];
    const commits = createGroupCommit<number>({
      lingerMs: 60_000,
      write: async (items) => void writes.push(items),
    });
    const added = commits.add([1, 2]);
    await commits.drain();
    expect(writes).to.deep.equal([[1, 2]]);
    await added;
    await commits.drain();
  });

  it('a failed write fails every caller in it, and the next batch still goes', async () => {
    let calls = 0;
    const commits = createGroupCommit<number>({
      write: async () => {
        calls += 1;
        if (calls === 1) throw new Error('disk full');
      },
    });
    const first = await Promise.all([settle(commits.add([1])), settle(commits.add([2]))]);
    expect(first).to.deep.equal(['disk full', 'disk full']);
    expect(await settle(commits.add([3]))).to.equal('ok');
  });

  it('a batch goes at once when it reaches maxItems', async () => {
    const writes: number[][] = [];
    const commits = createGroupCommit<number>({
      lingerMs: 60_000,
      maxItems: 2,
      write: async (items) => void writes.push(items),
    });
    await commits.add([1, 2]);
    expect(writes).to.deep.equal([[1, 2]]);
  });
});

describe('Kafka batching sender', () => {
  const fakeSlot = (send: ProducerSlot['send']): ProducerSlot => ({
    send,
    healthy: () => true,
    failedTopics: () => [],
    recovered: () => {},
    connect: async () => {},
    close: async () => {},
  });
  const message = (topic: string, key: string, deadline = Date.now() + 5000): PendingMessage => ({
    topic,
    message: { key, value: Buffer.from(key) },
    deadline,
  });

  it('sends concurrent publishes in one produce request, grouped by topic, by the earliest deadline', async () => {
    const requests: { topicMessages: TopicMessages[]; deadline: number }[] = [];
    const sender = createBatchingSender(
      fakeSlot(async (topicMessages, deadline) => void requests.push({ topicMessages, deadline })),
      { lingerMs: 5 },
    );
    const early = Date.now() + 3000;
    await Promise.all([
      sender.send([message('a', '1', early)]),
      sender.send([message('b', '2')]),
      sender.send([message('a', '3')]),
    ]);
    expect(requests).to.have.length(1);
    expect(requests[0]?.deadline).to.equal(early);
    expect(
      requests[0]?.topicMessages.map((t) => [t.topic, t.messages.map((m) => String(m.key))]),
    ).to.deep.equal([
      ['a', ['1', '3']],
      ['b', ['2']],
    ]);
  });

  it('fails every waiting caller when the request fails; sends nothing past a deadline', async () => {
    let sends = 0;
    const sender = createBatchingSender(
      fakeSlot(async () => {
        sends += 1;
        throw new Error('broker down');
      }),
    );
    const results = await Promise.all([
      settle(sender.send([message('a', '1')])),
      settle(sender.send([message('a', '2')])),
    ]);
    expect(results).to.deep.equal(['broker down', 'broker down']);
    expect(sends).to.equal(1);
    expect(await settle(sender.send([message('a', '3', Date.now() - 1)]))).to.match(/in time/);
    expect(sends).to.equal(1);
  });
});
