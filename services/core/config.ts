import type { LogLevel } from './observability/logger.ts';
import type { SealingKey } from './crypto/secret-box.ts';
import { isAddressOrRange } from './net/address-policy.ts';

/** The service's settings, read once from the environment at start, validated and frozen. */
export interface Config {
  /** HTTP port of the ingress (PORT, default 8080). */
  port: number;
  /** Interface the ingress binds (HOST, default 127.0.0.1: not reachable from other machines). */
  host: string;
  /** API key → organisation id (API_KEYS="key1:org1,key2:org2"). Empty when unset. */
  apiKeys: ReadonlyMap<string, string>;
  /**
   * Organisations a job produced straight to the bus may name (KNOWN_ORGS="org1,org2"; default:
   * the organisations of API_KEYS). Undefined when both are unset: workers then accept any
   * organisation, since they cannot tell a known one from another.
   */
  knownOrgs: ReadonlySet<string> | undefined;
  /** Kafka bootstrap servers (KAFKA_BROKERS, comma-separated). Unset: all-in-one on the embedded bus. */
  kafkaBrokers: readonly string[];
  /** Prepended to every Kafka topic name (KAFKA_TOPIC_PREFIX, default empty). */
  kafkaTopicPrefix: string;
  /**
   * Partitions of topics created at start (KAFKA_PARTITIONS, default 12): at most this many
   * workers of one kind share the work, and 12 splits evenly over 1, 2, 3, 4, 6 or 12 of them.
   */
  kafkaPartitions: number;
  /** Replicas of topics created at start (KAFKA_REPLICATION_FACTOR, default 1). */
  kafkaReplicationFactor: number;
  /**
   * A worker silent this long loses its partitions (KAFKA_SESSION_TIMEOUT_MS, default 15 s): the
   * time before a crashed worker's jobs move to another one. Heartbeats do not wait for jobs.
   */
  kafkaSessionTimeoutMs: number;
  /**
   * How long a rebalancing group waits for a busy worker to finish its running jobs before it
   * drops that worker and hands its jobs to others (KAFKA_REBALANCE_TIMEOUT_MS, default 5 min).
   */
  kafkaRebalanceTimeoutMs: number;
  /**
   * Job records one worker holds fetched from its partitions, running ones included
   * (KAFKA_WINDOW_RECORDS, default 256): a free slot picks fairly among these.
   */
  kafkaWindowRecords: number;
  /** Slot weight per organisation for fair shares (ORG_WEIGHTS="org1:3,org2:1"; default 1 each). */
  orgWeights: ReadonlyMap<string, number>;
  /** Jobs one organisation runs at once on one worker process (ORG_MAX_RUNNING, default 0: no cap). */
  orgMaxRunning: number;
  /** Confluent-compatible schema registry; set: events are registry-framed (SCHEMA_REGISTRY_URL). */
  schemaRegistryUrl: string | undefined;
  /** Port of /healthz, /readyz, /metrics of a worker process (METRICS_PORT, default 9464; 0: any free port). */
  metricsPort: number;
  /**
   * Lets caller URLs reach loopback and private networks (ALLOW_PRIVATE_NETWORKS, default false).
   * Link-local and cloud metadata addresses stay refused whatever it says.
   */
  allowPrivateNetworks: boolean;
  /** Addresses or CIDR ranges caller URLs may reach whatever their class, metadata included (ADDRESS_ALLOW_LIST, comma-separated; default none). */
  addressAllowList: readonly string[];
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
  /** ffmpeg (CPU) slots of one worker process: jobs encoding at once (WORKER_CONCURRENCY, default 1). */
  workerConcurrency: number;
  /**
   * Downloads and uploads one worker process runs at once, apart from the CPU slots
   * (TRANSFER_CONCURRENCY, default 2). A worker takes up to WORKER_CONCURRENCY + this many jobs.
   */
  transferConcurrency: number;
  /** Largest frame area, in pixels, of an input or an output (MAX_PIXELS, default 7680×4320 = 33 177 600, 8K UHD). */
  maxPixels: number;
  /** RLIMIT_DATA of every ffmpeg and ffprobe, in bytes (FFMPEG_MEMORY_LIMIT_BYTES, default 2 GiB). */
  ffmpegMemoryLimitBytes: number;
  /** A transfer slower than this over one window is cut, bytes/s (MIN_TRANSFER_BYTES_PER_SECOND, default 16 384; 0: no floor). */
  minTransferBytesPerSecond: number;
  /** The window over which the transfer rate floor is measured (TRANSFER_RATE_WINDOW_MS, default 30 s). */
  transferRateWindowMs: number;
  /** Root of the job work directories; unset: `<os tmpdir>/media-service/<service>` (WORK_DIR). */
  workDir: string | undefined;
  /** Attempts of a job whose failure is retryable (MAX_JOB_ATTEMPTS, default 3). */
  maxJobAttempts: number;
  /**
   * Backoff ceiling before the 2nd attempt, doubled each time; the wait is drawn at random
   * below it (full jitter) (RETRY_BACKOFF_MS, default 5 s).
   */
  retryBackoffMs: number;
  /** Cap of the doubled backoff ceiling (RETRY_BACKOFF_MAX_MS, default 5 min). */
  retryBackoffMaxMs: number;
  /** Time-out of one callback attempt, in ms (CALLBACK_TIMEOUT_MS, default 10 s). */
  callbackTimeoutMs: number;
  /**
   * Base of the callback backoff, in ms (CALLBACK_BACKOFF_MS, default 1 s): the wait before attempt
   * n + 1 is random in [0, min(base × 2^(n-1), CALLBACK_BACKOFF_MAX_MS)] (full jitter).
   */
  callbackBackoffMs: number;
  /** Cap of one callback backoff, in ms (CALLBACK_BACKOFF_MAX_MS, default 1 h). */
  callbackBackoffMaxMs: number;
  /**
   * A callback is retried until this long after its first attempt, in ms; an attempt that would
   * fall later is not made and the callback is given up (CALLBACK_RETRY_HORIZON_MS, default 24 h).
   */
  callbackRetryHorizonMs: number;
  /** Callback attempts one notifier process makes at once (CALLBACK_CONCURRENCY, default 16). */
  callbackConcurrency: number;
  /**
   * Callback attempts one notifier process makes at once to one host (CALLBACK_MAX_IN_FLIGHT_PER_HOST,
   * default 2), so a slow receiver holds at most this many of the CALLBACK_CONCURRENCY slots.
   */
  callbackMaxInFlightPerHost: number;
  /**
   * Standard Webhooks signing secrets by organisation (WEBHOOK_SECRETS="org1:whsec_…,org2:whsec_…").
   * Empty when unset. The value is the `whsec_` string; the key is its base64-decoded rest.
   */
  webhookSecrets: ReadonlyMap<string, string>;
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
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
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
  if (!/^https?:\/\/[^\s]+$/.test(raw))
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  return raw;
}

/** The organisation id rule of schemas/common/org-id.v1.schema.json: it names a folder, so no leading dot. */
const ORG_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

function addressList(env: Env, name: string): string[] {
  const entries = (env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = entries.find((e) => !isAddressOrRange(e));
  if (bad !== undefined)
    throw new ConfigError(
      `${name} must list IP addresses or CIDR ranges (e.g. "169.254.10.5,10.1.0.0/16"), got "${bad}"`,
    );
  return entries;
}

export function parseApiKeys(raw: string | undefined): Map<string, string> {
  const keys = new Map<string, string>();
  if (!raw) return keys;
  for (const pair of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const at = pair.lastIndexOf(':');
    const key = pair.slice(0, at);
    const org = pair.slice(at + 1);
    if (at <= 0 || !ORG_ID.test(org))
      throw new ConfigError(
        'API_KEYS must look like "key1:org1,key2:org2" (org: 1-64 letters, digits, . _ -, not starting with .)',
      );
    if (key.length < 16)
      throw new ConfigError('every key in API_KEYS must be at least 16 characters');
    keys.set(key, org);
  }
  return keys;
}

function knownOrgs(
  raw: string | undefined,
  apiKeys: ReadonlyMap<string, string>,
): ReadonlySet<string> | undefined {
  const listed = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = listed.find((org) => !ORG_ID.test(org));
  if (bad !== undefined)
    throw new ConfigError(
      `KNOWN_ORGS must list organisation ids (1-64 letters, digits, . _ -, not starting with .), got "${bad}"`,
    );
  if (listed.length > 0) return new Set(listed);
  return apiKeys.size > 0 ? new Set(apiKeys.values()) : undefined;
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

/** `org:whsec_<base64 of 24–64 bytes>` pairs (the Standard Webhooks secret format). */
export function parseWebhookSecrets(raw: string | undefined): Map<string, string> {
  const secrets = new Map<string, string>();
  if (!raw) return secrets;
  for (const pair of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const at = pair.indexOf(':');
    const org = pair.slice(0, at);
    const secret = pair.slice(at + 1);
    const key = /^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)
      ? Buffer.from(secret.slice(6), 'base64')
      : Buffer.alloc(0);
    if (at <= 0 || !/^[A-Za-z0-9._-]{1,64}$/.test(org) || key.length < 24 || key.length > 64)
      throw new ConfigError(
        'WEBHOOK_SECRETS must look like "org1:whsec_<base64 of 24 to 64 bytes>,org2:whsec_…"',
      );
    if (secrets.has(org)) throw new ConfigError(`WEBHOOK_SECRETS names organisation ${org} twice`);
    secrets.set(org, secret);
  }
  return secrets;
}

/** `org:weight` pairs, weights whole numbers from 1 to 1000. */
export function parseOrgWeights(raw: string | undefined): Map<string, number> {
  const weights = new Map<string, number>();
  for (const pair of (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const at = pair.lastIndexOf(':');
    const org = pair.slice(0, at);
    const weight = Number(pair.slice(at + 1));
    if (at <= 0 || !ORG_ID.test(org) || !Number.isInteger(weight) || weight < 1 || weight > 1000)
      throw new ConfigError(
        'ORG_WEIGHTS must look like "org1:3,org2:1" (weights: whole numbers from 1 to 1000)',
      );
    if (weights.has(org)) throw new ConfigError(`ORG_WEIGHTS names organisation ${org} twice`);
    weights.set(org, weight);
  }
  return weights;
}

// Settings that were removed: starting with them set would silently change what callers get.
const REPLACED: Record<string, string> = {
  CALLBACK_SIGNING_SECRET:
    'WEBHOOK_SECRETS (Standard Webhooks signatures, one secret per organisation)',
  CALLBACK_MAX_ATTEMPTS:
    'CALLBACK_RETRY_HORIZON_MS (callbacks are retried for a time, not a count)',
};

const LEVELS = new Set(['debug', 'info', 'warn', 'error', 'silent']);

export function loadConfig(env: Env): Readonly<Config> {
  const logLevel = env['LOG_LEVEL'] ?? 'info';
  if (!LEVELS.has(logLevel))
    throw new ConfigError(`LOG_LEVEL must be one of ${[...LEVELS].join(', ')}`);
  const prefix = env['KAFKA_TOPIC_PREFIX'] ?? '';
  if (!/^[A-Za-z0-9._-]{0,100}$/.test(prefix))
    throw new ConfigError('KAFKA_TOPIC_PREFIX may hold only letters, digits, . _ -');
  for (const [name, by] of Object.entries(REPLACED))
    if (env[name] !== undefined) throw new ConfigError(`${name} is no longer read; use ${by}`);
  const brokers = (env['KAFKA_BROKERS'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const apiKeys = parseApiKeys(env['API_KEYS']);
  return Object.freeze({
    port: int(env, 'PORT', 8080, 0, 65535),
    host: env['HOST'] || '127.0.0.1',
    apiKeys,
    knownOrgs: knownOrgs(env['KNOWN_ORGS'], apiKeys),
    kafkaBrokers: Object.freeze(brokers),
    kafkaTopicPrefix: env['KAFKA_TOPIC_PREFIX'] ?? '',
    kafkaPartitions: int(env, 'KAFKA_PARTITIONS', 12, 1, 1000),
    kafkaReplicationFactor: int(env, 'KAFKA_REPLICATION_FACTOR', 1, 1, 10),
    kafkaSessionTimeoutMs: int(env, 'KAFKA_SESSION_TIMEOUT_MS', 15_000, 6000, 300_000),
    kafkaRebalanceTimeoutMs: int(env, 'KAFKA_REBALANCE_TIMEOUT_MS', 300_000, 10_000, 3600_000),
    kafkaWindowRecords: int(env, 'KAFKA_WINDOW_RECORDS', 256, 2, 4000),
    orgWeights: parseOrgWeights(env['ORG_WEIGHTS']),
    orgMaxRunning: int(env, 'ORG_MAX_RUNNING', 0, 0, 1024),
    schemaRegistryUrl: env['SCHEMA_REGISTRY_URL'] || undefined,
    metricsPort: int(env, 'METRICS_PORT', 9464, 0, 65535),
    allowPrivateNetworks: bool(env, 'ALLOW_PRIVATE_NETWORKS', false),
    addressAllowList: Object.freeze(addressList(env, 'ADDRESS_ALLOW_LIST')),
    dataDir: env['DATA_DIR'] || '.data',
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxInputBytes: int(env, 'MAX_INPUT_BYTES', 4 * 1024 ** 3, 1024, 1024 ** 4),
    jobTimeoutMs: int(env, 'JOB_TIMEOUT_MS', 30 * 60_000, 1000, 24 * 3600_000),
    stallTimeoutMs: int(env, 'STALL_TIMEOUT_MS', 60_000, 1000, 3600_000),
    workerConcurrency: int(env, 'WORKER_CONCURRENCY', 1, 1, 64),
    transferConcurrency: int(env, 'TRANSFER_CONCURRENCY', 2, 1, 64),
    maxPixels: int(env, 'MAX_PIXELS', 7680 * 4320, 64 * 64, 16384 * 16384),
    ffmpegMemoryLimitBytes: int(
      env,
      'FFMPEG_MEMORY_LIMIT_BYTES',
      2 * 1024 ** 3,
      64 * 1024 ** 2,
      1024 ** 4,
    ),
    minTransferBytesPerSecond: int(env, 'MIN_TRANSFER_BYTES_PER_SECOND', 16_384, 0, 1024 ** 3),
    transferRateWindowMs: int(env, 'TRANSFER_RATE_WINDOW_MS', 30_000, 100, 3600_000),
    workDir: env['WORK_DIR'] || undefined,
    maxJobAttempts: int(env, 'MAX_JOB_ATTEMPTS', 3, 1, 20),
    retryBackoffMs: int(env, 'RETRY_BACKOFF_MS', 5000, 0, 3600_000),
    retryBackoffMaxMs: int(env, 'RETRY_BACKOFF_MAX_MS', 300_000, 0, 24 * 3600_000),
    callbackTimeoutMs: int(env, 'CALLBACK_TIMEOUT_MS', 10_000, 100, 120_000),
    callbackBackoffMs: int(env, 'CALLBACK_BACKOFF_MS', 1000, 0, 3600_000),
    callbackBackoffMaxMs: int(env, 'CALLBACK_BACKOFF_MAX_MS', 3600_000, 0, 24 * 3600_000),
    // Seven days at most: the embedded bus and Kafka's default retention keep records that long.
    callbackRetryHorizonMs: int(
      env,
      'CALLBACK_RETRY_HORIZON_MS',
      24 * 3600_000,
      0,
      7 * 24 * 3600_000,
    ),
    callbackConcurrency: int(env, 'CALLBACK_CONCURRENCY', 16, 1, 256),
    callbackMaxInFlightPerHost: int(env, 'CALLBACK_MAX_IN_FLIGHT_PER_HOST', 2, 1, 256),
    webhookSecrets: parseWebhookSecrets(env['WEBHOOK_SECRETS']),
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
