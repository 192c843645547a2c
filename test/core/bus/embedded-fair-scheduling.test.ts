import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';
import type { EventBus, Subscription } from '../../../services/core/bus/event-bus.ts';
import {
  TOPIC,
  oneKeyStaysInOrder,
  otherOrgTakesFirstFreeSlot,
  shortJobSlotTakesNextAtOnce,
  type ScenarioBus,
} from '../../support/fair-scenarios.ts';

describe('embedded bus: fair scheduling', function () {
  this.timeout(30_000);
  let dir: string;
  let bus: EventBus;
  let subs: Subscription[];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-fair-'));
    bus = createEmbeddedBus({ path: join(dir, 'b.sqlite') });
    subs = [];
  });
  afterEach(async () => {
    await Promise.all(subs.map((s) => s.close(0)));
    await bus.close();
    await rm(dir, { recursive: true, force: true });
  });

  const scenario = (): ScenarioBus => ({
    bus,
    async subscribe(options) {
      subs.push(await bus.subscribe({ ...options, group: 'g', topics: [TOPIC] }));
    },
    async until(check, ms, what) {
      const end = Date.now() + ms;
      while (!check()) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
  });

  it("another organisation's job takes the first slot that frees, ahead of a backlog", () =>
    otherOrgTakesFirstFreeSlot(scenario()));

  it('a short job’s slot takes the next record at once while a long one runs', () =>
    shortJobSlotTakesNextAtOnce(scenario()));

  it('records of one job id start one after another, in order', () =>
    oneKeyStaysInOrder(scenario()));
});
