import type { Subscription } from '../core/bus/event-bus.ts';
import type { Runtime } from '../core/runtime/create-runtime.ts';
import { startMediaWorker } from '../core/runtime/start-media-worker.ts';
import { createSummaryHandler } from './handle-summary.ts';

export function startSummarizer(rt: Runtime): Promise<Subscription> {
  return startMediaWorker(rt, 'summary', 'summarizer', createSummaryHandler);
}
