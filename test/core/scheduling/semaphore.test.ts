import { expect } from 'chai';
import { createSemaphore } from '../../../services/core/scheduling/semaphore.ts';

describe('semaphore', () => {
  it('runs at most `size` at once, in arrival order, and a waiter whose signal aborts never takes a slot', async () => {
    const slots = createSemaphore(1);
    const order: string[] = [];
    let release = (): void => undefined;
    const first = slots.use(new AbortController().signal, () =>
      new Promise<void>((r) => (release = r)).then(() => void order.push('a')),
    );
    const stopped = new AbortController();
    const second = slots.use(stopped.signal, async () => void order.push('never'));
    const third = slots.use(new AbortController().signal, async () => void order.push('c'));
    expect(slots.inUse).to.equal(1);
    stopped.abort(new Error('job stopped'));
    expect(await second.catch((e: Error) => e.message)).to.equal('job stopped');
    release();
    await Promise.all([first, third]);
    expect(order).to.deep.equal(['a', 'c']);
    expect(slots.inUse).to.equal(0);
  });
});

describe('semaphore: fair between organisations', () => {
  it('a freed slot goes to the waiting organisation holding fewest slots, ahead of older waiters', async () => {
    const sem = createSemaphore(1);
    const signal = new AbortController().signal;
    const order: string[] = [];
    let releaseFirst = (): void => {};
    const first = sem.use(signal, () => new Promise<void>((r) => (releaseFirst = r)), 'a');
    const waiting = ['a', 'a', 'b'].map((org, i) =>
      sem.use(signal, async () => void order.push(`${org}${i}`), org),
    );
    await new Promise((r) => setImmediate(r));
    releaseFirst();
    await Promise.all([first, ...waiting]);
    expect(order).to.deep.equal(['b2', 'a0', 'a1']);
  });
});
