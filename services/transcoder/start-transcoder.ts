import type { Subscription } from '../core/bus/event-bus.ts';
import type { Runtime } from '../core/runtime/create-runtime.ts';
import { startMediaWorker } from '../core/runtime/start-media-worker.ts';
import { createTranscodeHandler } from './handle-transcode.ts';

export function startTranscoder(rt: Runtime): Promise<Subscription> {
  return startMediaWorker(rt, 'transcode', 'transcoder', createTranscodeHandler);
}
