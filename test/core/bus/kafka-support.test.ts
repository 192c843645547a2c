import { expect } from 'chai';
import { createDisconnect } from '../../../services/core/bus/kafka-support.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';

const never = { disconnect: () => new Promise<void>(() => undefined) };
const quick = { disconnect: () => new Promise<void>((resolve) => setTimeout(resolve, 20)) };

async function took(work: Promise<void>): Promise<number> {
  const started = performance.now();
  await work;
  return performance.now() - started;
}

describe('Kafka: disconnects at close', () => {
  it('each waits its bound at most; once one went unanswered, the next ones wait the short bound', async () => {
    const disconnect = createDisconnect(silentLogger, 300, 50);
    expect(await took(disconnect(quick, 'a')), 'an answered one waits for its answer').to.be.below(
      200,
    );
    expect(await took(disconnect(never, 'b'))).to.be.within(290, 450);
    expect(await took(disconnect(never, 'c'))).to.be.within(45, 200);
  });
});
