import { runWorkerService } from '../core/runtime/run-worker-service.ts';
import { startTranscoder } from './start-transcoder.ts';

await runWorkerService('transcoder', { opensSecrets: true }, startTranscoder);
