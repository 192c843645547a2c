import { runWorkerService } from '../core/runtime/run-worker-service.ts';
import { startSummarizer } from './start-summarizer.ts';

await runWorkerService('summarizer', { opensSecrets: true }, startSummarizer);
