import type { LogLevel } from './observability/logger.ts';
import type { SealingKey } from './crypto/secret-box.ts';

/** The service's settings, read once from the environment at start, validated and frozen. */
export interface Config {
  /** HTTP port of the ingress (PORT, default 8080). */
  port: number;
  /** Interface the ingress binds (HOST, default 127.0.0.1: not reachable from other machines). */
  host: string;
  /** API key → organisation id (API_KEYS="key1:org1,key2:org2"). Empty when unset. */
  apiKeys: ReadonlyMap<string, string>;
  /** Kafka bootstrap servers (KAFKA_BROKERS, comma-separated). Unset: all-in-one on the embedded bus. */
  kafkaBrokers: readonly string[];
  /** Prepended to every Kafka topic name (KAFKA_TOPIC_PREFIX, default empty). */
  kafkaTopicPrefix: string;
  /** Partitions of topics created at start (KAFKA_PARTITIONS, default 6). */
  kafkaPartitions: number;
  /** Replicas of topics created at start (KAFKA_REPLICATION_FACTOR, default 1). */
  kafkaReplicationFactor: number;
  /** A worker silent this long loses its partitions (KAFKA_SESSION_TIMEOUT_MS, default 30 s). */
  kafkaSessionTimeoutMs: number;
  /**
   * How long a rebalancing group waits for a busy worker to finish its running jobs before it
   * drops that worker and hands its jobs to others (KAFKA_REBALANCE_TIMEOUT_MS, default 5 min).
   */
  kafkaRebalanceTimeoutMs: number;
  /** Confluent-compatible schema registry; set: events are registry-framed (SCHEMA_REGISTRY_URL). */
  schemaRegistryUrl: string | undefined;
  /** Port of /healthz, /readyz, /metrics of a worker process (METRICS_PORT, default 9464; 0: any free port). */
  metricsPort: number;
  /** Lets caller URLs reach loopback and private networks (ALLOW_PRIVATE_NETWORKS, default false). */
  allowPrivateNetworks: boolean;
  /** Where the embedded bus and generated first-run secrets live (DATA_DIR, default ./.data). */
  dataDir: string;
  /** Largest request body accepted, in bytes (MAX_BODY_BYTES, default 1 MiB). */
  maxBodyBytes: number;
  /** Largest input file downloaded, in bytes (MAX_INPUT_BYTES, default 4 GiB). */
  maxInputBytes: number;
  /** Longest one job attempt may run (JOB_TIMEOUT_MS, default 30 min). */
  jobTimeoutMs: number;
  /** ffmpeg with no progress for this long is killed (STALL_TIMEOUT_MS, default 60 s). */
  stallTimeoutMs: number;
  /** Jobs one worker process runs at once (WORKER_CONCURRENCY, default 1). */
  workerConcurrency: number;
  /** Attempts of a job whose failure is retryable (MAX_JOB_ATTEMPTS, default 3). */
  maxJobAttempts: number;
  /**
   * Backoff ceiling before the 2nd attempt, doubled each time; the wait is drawn at random
   * below it (full jitter) (RETRY_BACKOFF_MS, default 5 s).
   */
  retryBackoffMs: number;
  /** Cap of the doubled backoff ceiling (RETRY_BACKOFF_MAX_MS, default 5 min). */
  retryBackoffMaxMs: number;
  /** Callback deliveries before one is dead-lettered (CALLBACK_MAX_ATTEMPTS, default 6). */
  callbackMaxAttempts: number;
  /** Time-out of one callback attempt (CALLBACK_TIMEOUT_MS, default 10 s). */
  callbackTimeoutMs: number;
  /** Backoff before the 2nd callback attempt, doubled each time (CALLBACK_BACKOFF_MS, default 1 s). */
  callbackBackoffMs: number;
  /** HMAC-SHA256 key for the X-Media-Signature header of callbacks (CALLBACK_SIGNING_SECRET). */
  callbackSigningSecret: string | undefined;
  /** Keys that seal credentials in events; the first seals (CREDENTIALS_KEYS="id:base64-32-bytes,..."). */
  sealingKeys: readonly SealingKey[];
  /** Time to finish in-flight work after SIGTERM (SHUTDOWN_GRACE_MS, default 30 s). */
  shutdownGraceMs: number;
  /** S3-compatible endpoint instead of AWS (S3_ENDPOINT, e.g. MinIO); path-style addressing then. */
  s3Endpoint: string | undefined;
  /** Azure blob endpoint template, `{accountName}` replaced (AZURE_BLOB_ENDPOINT; default https://{accountName}.blob.core.windows.net). */
  azureBlobEndpoint: string | undefined;
  /** Google Cloud Storage API endpoint instead of Google's (GCS_API_ENDPOINT, e.g. fake-gcs-server). */
  gcsApiEndpoint: string | undefined;
  /** Named watermark images, as <dir>/<orgId>/<imageName> (WATERMARK_IMAGES_DIR; unset: none). */
  watermarkImagesDir: string | undefined;
  ffmpegPath: string;
  ffprobePath: string;
  /** Font for text watermarks (FONT_FILE, default DejaVu Sans). */
  fontFile: string;
  logLevel: LogLevel;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function url(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (!raw) return undefined;
  if (!/^https?:\/\/[^\s]+$/.test(raw)) throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  return raw;
}

export function parseApiKeys(raw: string | undefined): Map<string, string> {
  const keys = new Map<string, string>();
  if (!raw) return keys;
  for (const pair of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    const at = pair.lastIndexOf(':');
    const key = pair.slice(0, at);
    const org = pair.slice(at + 1);
    if (at <= 0 || !/^[A-Za-z0-9._-]{1,64}$/.test(org)) throw new ConfigError('API_KEYS must look like "key1:org1,key2:org2" (org: letters, digits, . _ -)');
    if (key.length < 16) throw new ConfigError('every key in API_KEYS must be at least 16 characters');
    keys.set(key, org);
  }
  return keys;
}

export function parseSealingKeys(raw: string | undefined): SealingKey[] {
  if (!raw) return [];
  return raw.split(',').map((pair) => {
    const [id, b64] = pair.trim().split(':');
    const key = Buffer.from(b64 ?? '', 'base64');
    if (!id || !/^[A-Za-z0-9._-]{1,64}$/.test(id) || key.length !== 32)
      throw new ConfigError('CREDENTIALS_KEYS must look like "keyid:<base64 of 32 bytes>,..."');
    return { id, key };
  });
}

const LEVELS = new Set(['debug', 'info', 'warn', 'error', 'silent']);

export function loadConfig(env: Env): Readonly<Config> {
  const logLevel = env['LOG_LEVEL'] ?? 'info';
  if (!LEVELS.has(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${[...LEVELS].join(', ')}`);
  const prefix = env['KAFKA_TOPIC_PREFIX'] ?? '';
  if (!/^[A-Za-z0-9._-]{0,100}$/.test(prefix)) throw new ConfigError('KAFKA_TOPIC_PREFIX may hold only letters, digits, . _ -');
  const brokers = (env['KAFKA_BROKERS'] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return Object.freeze({
    port: int(env, 'PORT', 8080, 0, 65535),
    host: env['HOST'] || '127.0.0.1',
    apiKeys: parseApiKeys(env['API_KEYS']),
    kafkaBrokers: Object.freeze(brokers),
    kafkaTopicPrefix: env['KAFKA_TOPIC_PREFIX'] ?? '',
    kafkaPartitions: int(env, 'KAFKA_PARTITIONS', 6, 1, 1000),
    kafkaReplicationFactor: int(env, 'KAFKA_REPLICATION_FACTOR', 1, 1, 10),
    kafkaSessionTimeoutMs: int(env, 'KAFKA_SESSION_TIMEOUT_MS', 30_000, 6000, 300_000),
    kafkaRebalanceTimeoutMs: int(env, 'KAFKA_REBALANCE_TIMEOUT_MS', 300_000, 10_000, 3600_000),
    schemaRegistryUrl: env['SCHEMA_REGISTRY_URL'] || undefined,
    metricsPort: int(env, 'METRICS_PORT', 9464, 0, 65535),
    allowPrivateNetworks: bool(env, 'ALLOW_PRIVATE_NETWORKS', false),
    dataDir: env['DATA_DIR'] || '.data',
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxInputBytes: int(env, 'MAX_INPUT_BYTES', 4 * 1024 ** 3, 1024, 1024 ** 4),
    jobTimeoutMs: int(env, 'JOB_TIMEOUT_MS', 30 * 60_000, 1000, 24 * 3600_000),
    stallTimeoutMs: int(env, 'STALL_TIMEOUT_MS', 60_000, 1000, 3600_000),
    workerConcurrency: int(env, 'WORKER_CONCURRENCY', 1, 1, 64),
    maxJobAttempts: int(env, 'MAX_JOB_ATTEMPTS', 3, 1, 20),
    retryBackoffMs: int(env, 'RETRY_BACKOFF_MS', 5000, 0, 3600_000),
    retryBackoffMaxMs: int(env, 'RETRY_BACKOFF_MAX_MS', 300_000, 0, 24 * 3600_000),
    callbackMaxAttempts: int(env, 'CALLBACK_MAX_ATTEMPTS', 6, 1, 50),
    callbackTimeoutMs: int(env, 'CALLBACK_TIMEOUT_MS', 10_000, 100, 120_000),
    callbackBackoffMs: int(env, 'CALLBACK_BACKOFF_MS', 1000, 0, 3600_000),
    callbackSigningSecret: env['CALLBACK_SIGNING_SECRET'] || undefined,
    sealingKeys: Object.freeze(parseSealingKeys(env['CREDENTIALS_KEYS'])),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 30_000, 0, 3600_000),
    s3Endpoint: url(env, 'S3_ENDPOINT'),
    azureBlobEndpoint: env['AZURE_BLOB_ENDPOINT'] || undefined,
    gcsApiEndpoint: url(env, 'GCS_API_ENDPOINT'),
    watermarkImagesDir: env['WATERMARK_IMAGES_DIR'] || undefined,
    ffmpegPath: env['FFMPEG_PATH'] || 'ffmpeg',
    ffprobePath: env['FFPROBE_PATH'] || 'ffprobe',
    fontFile: env['FONT_FILE'] || '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf',
    logLevel: logLevel as LogLevel,
  });
}
