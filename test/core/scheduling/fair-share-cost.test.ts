import { expect } from 'chai';
import { createFairShare } from '../../../services/core/scheduling/fair-share.ts';
import { createSemaphore } from '../../../services/core/scheduling/semaphore.ts';

interface Job {
  org: string;
  n: number;
  cost: number;
}

describe('fair shares with costs (a stream ladder weighs more than a transcode)', () => {
  it('one slot: an organisation of ladders of cost 2 gets one start for two of a transcoding one', () => {
    const fair = createFairShare();
    let waiting: Job[] = [
      ...Array.from({ length: 4 }, (_, n) => ({ org: 'ladders', n, cost: 2 })),
      ...Array.from({ length: 8 }, (_, n) => ({ org: 'transcodes', n, cost: 1 })),
    ];
    const order: string[] = [];
    for (let i = 0; i < 9; i += 1) {
      const [job] = fair.pick(
        waiting,
        1,
        (j) => j.org,
        (j) => j.cost,
      );
      if (!job) throw new Error('nothing picked');
      order.push(job.org[0] ?? '');
      waiting = waiting.filter((j) => j !== job);
      fair.finished(job.org, job.cost);
    }
    expect(order.join('')).to.equal('lttlttltt');
  });

  it('the semaphore counts a holder at its cost: the freed slot goes to the lighter organisation', async () => {
    const slots = createSemaphore(3);
    const signal = new AbortController().signal;
    const order: string[] = [];
    const gate = () => {
      let open!: () => void;
      const closed = new Promise<void>((r) => (open = r));
      return { open, closed };
    };
    const [ladder, first, second] = [gate(), gate(), gate()];
    // Org a holds one slot for a ladder of cost 2.5, org b two slots for transcodes.
    const running = [
      slots.use(signal, () => ladder.closed, 'a', 2.5),
      slots.use(signal, () => first.closed, 'b'),
      slots.use(signal, () => second.closed, 'b'),
    ];
    const waitA = slots.use(signal, async () => void order.push('a'), 'a');
    const waitB = slots.use(signal, async () => void order.push('b'), 'b');
    // One of b's transcodes ends: b runs 1 against a's 2.5, so b's waiter goes first, though a
    // asked first and, counted by slots (1 each), would have won on its earlier pass.
    first.open();
    await running[1];
    ladder.open();
    second.open();
    await Promise.all([...running, waitA, waitB]);
    expect(order).to.deep.equal(['b', 'a']);
  });
});
