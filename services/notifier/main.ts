import { runWorkerService } from '../core/runtime/run-worker-service.ts';
import { startNotifierService } from './start-notifier.ts';

await runWorkerService('notifier', { opensSecrets: false }, startNotifierService);
