import { startAllInOne, type AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { loadConfig } from '../../services/core/config.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';

/**
 * The all-in-one service in this process on free ports, silent, with its state in `dataDir` (a
 * second start on the same directory is a restart) and private-network URLs allowed (the tests'
 * servers are on loopback); `env` adds settings or replaces these, API_KEYS at least.
 */
export function startTestAllInOne(dataDir: string, env: Record<string, string>): Promise<AllInOne> {
  const config = loadConfig({
    PORT: '0',
    METRICS_PORT: '0',
    ALLOW_PRIVATE_NETWORKS: 'true',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    ...env,
  });
  return startAllInOne(config, { log: silentLogger });
}
