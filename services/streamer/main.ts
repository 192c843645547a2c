import { runWorkerService } from '../core/runtime/run-worker-service.ts';
import { startStreamer } from './start-streamer.ts';

await runWorkerService('streamer', { opensSecrets: true }, startStreamer);
