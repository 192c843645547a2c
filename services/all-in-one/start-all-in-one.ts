import { join } from 'node:path';
import type { Config } from '../core/config.ts';
import { createLogger, type Logger } from '../core/observability/logger.ts';
import { startTracing, type Tracing } from '../core/observability/tracing.ts';
import { createRuntime } from '../core/runtime/create-runtime.ts';
import {
  firstRunApiKey,
  firstRunSealingKey,
  firstRunWebhookSecret,
} from '../core/runtime/first-run-secrets.ts';
import { startIngress, type RunningIngress } from '../ingress/start-ingress.ts';
import { startNotifierService } from '../notifier/start-notifier.ts';
import { startStreamer } from '../streamer/start-streamer.ts';
import { startSummarizer } from '../summarizer/start-summarizer.ts';
import { startTranscoder } from '../transcoder/start-transcoder.ts';

export interface AllInOne {
  ingress: RunningIngress;
  /** Turns /readyz to 503, lets running jobs finish within the grace period, closes the API and the bus. */
  close(): Promise<void>;
}

/**
 * The five services in one process on the embedded bus: the launcher is the one place that
 * composes services (services never import each other).
 */
export async function startAllInOne(
  config: Readonly<Config>,
  options: { log?: Logger; tracing?: Tracing } = {},
): Promise<AllInOne> {
  const log =
    options.log ?? createLogger({ level: config.logLevel, base: { service: 'all-in-one' } });
  // Made here when not given (tests start the launcher without runService), and then ended here.
  const tracing = options.tracing ?? (await startTracing(config.traceExport, 'all-in-one', log));
  const sealingKeys = config.sealingKeys.length
    ? config.sealingKeys
    : [firstRunSealingKey(config.dataDir)];
  const rt = createRuntime(config, {
    service: 'all-in-one',
    sealingKeys,
    log,
    tracing,
    // One process reads and writes the library, so a folder beside the bus is enough.
    watermarkDir: join(config.dataDir, 'watermarks'),
  });
  let apiKeys = config.apiKeys;
  if (apiKeys.size === 0) {
    const firstRun = firstRunApiKey(config.dataDir);
    apiKeys = firstRun.apiKeys;
    rt.log.warn('auth.first_run_key', {
      keyFile: firstRun.path,
      created: firstRun.created,
      note: 'API_KEYS is unset: the key in this file is the only one accepted',
    });
  }
  let fallbackSecret: string | undefined;
  if (config.webhookSecrets.size === 0) {
    const firstRun = firstRunWebhookSecret(config.dataDir);
    fallbackSecret = firstRun.secret;
    rt.log.warn('callback.first_run_secret', {
      file: firstRun.path,
      created: firstRun.created,
      note: 'WEBHOOK_SECRETS is unset: every callback is signed with the secret in this file',
    });
  }
  const notifierOptions = fallbackSecret ? { fallbackSecret } : {};
  const workers = await Promise.all([
    startTranscoder(rt),
    startSummarizer(rt),
    startStreamer(rt),
    startNotifierService(rt, notifierOptions),
  ]);
  const [current] = sealingKeys;
  if (!current) throw new Error('no sealing key');
  const ingress = await startIngress(rt, { apiKeys, sealingKey: current });
  return {
    ingress,
    async close() {
      // The API stays up while the jobs drain, /readyz saying 503 and GET /jobs/:id still
      // answering; a job submitted meanwhile is queued in the bus and runs after the restart.
      rt.drain.begin();
      await Promise.all(workers.map((w) => w.close(config.shutdownGraceMs)));
      await ingress.close();
      await rt.bus.close();
      if (!options.tracing) await tracing.shutdown();
    },
  };
}
