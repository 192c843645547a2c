import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';
import { eventBusConformance } from '../../support/event-bus-conformance.ts';

// The embedded bus against the EventBus conformance suite: each case on a file of its own in a
// fresh directory; a restart is the bus opened again on the same file.
eventBusConformance('embedded bus (SQLite)', { movesWaitingRecords: false }, () => ({
  async newPlace({ redeliveryDelayMs }) {
    const dir = await mkdtemp(join(tmpdir(), 'media-bus-conformance-'));
    return {
      open: () => createEmbeddedBus({ path: join(dir, 'bus.sqlite'), redeliveryDelayMs }),
      remove: () => rm(dir, { recursive: true, force: true }),
    };
  },
  deliveryMs: 5000,
  quietMs: 150,
}));
