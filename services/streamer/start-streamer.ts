import type { Subscription } from '../core/bus/event-bus.ts';
import type { Runtime } from '../core/runtime/create-runtime.ts';
import { startMediaWorker } from '../core/runtime/start-media-worker.ts';
import { createStreamHandler } from './handle-stream.ts';

export function startStreamer(rt: Runtime): Promise<Subscription> {
  return startMediaWorker(rt, 'stream', 'streamer', createStreamHandler);
}
