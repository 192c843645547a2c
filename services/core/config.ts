// Every setting of every service, declared once: the environment variable, its type and rule
// (a JSON Schema checked by one ajv validator), its default and its description. `loadConfig`
// reads them all at start into one frozen, typed object; the table of docs/configuration.md is
// rendered from this list (`npm run generate:config-table`; test/docs.test.ts fails when it is
// stale).
//
// To add a variable, add ONE entry to `settings` below, where it should appear in the table:
//
//     /** TSDoc for code that reads it (units in the field name: …Ms, …Bytes). */
//     fooTimeoutMs: integer('FOO_TIMEOUT_MS', {
//       default: 5000, minimum: 100, maximum: 60_000,
//       doc: 'what it does, for the table',
//     }),
//
// then run `npm run generate:config-table`. The field appears on `Config` with its type; nothing
// else changes. Builders (services/core/settings.ts): `integer`, `optionalInteger`, `flag`, `text`
// (with a default), `optionalText`, `httpUrl`, `oneOf`, `list`; for anything else write the entry out
// (`{ env, kind, schema, doc, build }`, see apiKeys). Rules go in `schema` (so ajv reports them,
// naming the variable); `build` only shapes the checked value. A variable that was removed goes in
// RETIRED, so a deployment still setting it is refused at start instead of silently ignored.
import type { SealingKey } from './crypto/secret-box.ts';
import type { LogLevel } from './observability/logger.ts';
import { SAMPLERS, type TraceExportSettings } from './observability/tracing.ts';
import {
  ConfigError,
  compileSettings,
  flag,
  httpUrl,
  integer,
  list,
  oneOf,
  optionalInteger,
  optionalText,
  settingsTable,
  text,
  type Env,
  type Setting,
  type SettingsValues,
} from './settings.ts';

export { ConfigError } from './settings.ts';

/** The organisation id rule of schemas/common/org-id.v1.schema.json: it names a folder, so no leading dot. */
const ORG_ID = '[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}';
const ORG_RULE = '1-64 letters, digits, . _ -, not starting with .';
const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** `key:org` pairs; the key is everything before the last colon (an org id has none). */
function pairs(items: readonly string[] | undefined): [string, string][] {
  return (items ?? []).map((p) => {
    const at = p.lastIndexOf(':');
    return [p.slice(0, at), p.slice(at + 1)];
  });
}

const apiKeys: Setting<ReadonlyMap<string, string>> = {
  env: 'API_KEYS',
  kind: 'list',
  secret: true,
  schema: {
    type: 'string',
    allOf: [
      {
        pattern: `^.+:${ORG_ID}$`,
        errorMessage: `must look like "key1:org1,key2:org2" (org: ${ORG_RULE})`,
      },
      { pattern: '^.{16,}:', errorMessage: 'must have keys of at least 16 characters each' },
    ],
  },
  doc: '`key1:org1,key2:org2`; keys ≥ 16 characters. Unset in all-in-one mode: one random key is made in `$DATA_DIR/api-key`',
  build: (v) => new Map(pairs(v as string[] | undefined)),
};

const knownOrgs: Setting<ReadonlySet<string> | undefined> = {
  env: 'KNOWN_ORGS',
  kind: 'list',
  schema: { type: 'string', pattern: `^${ORG_ID}$` },
  rule: `must list organisation ids (${ORG_RULE})`,
  shownDefault: '(the organisations of API_KEYS)',
  doc: '`org1,org2`: the organisations a job produced straight to Kafka may name (workers); a job naming another is refused (`invalid_event`). With neither set, workers accept any organisation',
  // Undefined when both are unset: workers then accept any organisation, since they cannot tell
  // a known one from another.
  build: (v, all) => {
    const listed = (v as string[] | undefined) ?? [];
    if (listed.length > 0) return new Set(listed);
    const orgs = pairs(all['API_KEYS'] as string[] | undefined).map(([, org]) => org);
    return orgs.length > 0 ? new Set(orgs) : undefined;
  },
};

const webhookSecrets: Setting<ReadonlyMap<string, string>> = {
  env: 'WEBHOOK_SECRETS',
  kind: 'list',
  secret: true,
  // 24 to 64 bytes: 32 to 88 base64 characters (the Standard Webhooks secret format).
  schema: {
    type: 'string',
    pattern: '^[A-Za-z0-9._-]{1,64}:whsec_(?=[A-Za-z0-9+/=]{32,88}$)[A-Za-z0-9+/]+={0,2}$',
    errorMessage: 'must look like "org1:whsec_<base64 of 24 to 64 bytes>,org2:whsec_…"',
  },
  doc: '`org1:whsec_…,org2:whsec_…`: Standard Webhooks signing secret per organisation (24–64 bytes, base64). Unset in all-in-one mode: one is made in `$DATA_DIR/webhook-secret` for every organisation. Replaces `CALLBACK_SIGNING_SECRET` (refused at start if set)',
  build: (v) => {
    const secrets = new Map<string, string>();
    for (const p of (v as string[] | undefined) ?? []) {
      const at = p.indexOf(':');
      const org = p.slice(0, at);
      if (secrets.has(org))
        throw new ConfigError(`WEBHOOK_SECRETS names organisation ${org} twice`);
      secrets.set(org, p.slice(at + 1));
    }
    return secrets;
  },
};

/** Slot weight per organisation for fair shares; default 1 each. */
const orgWeights: Setting<ReadonlyMap<string, number>> = {
  env: 'ORG_WEIGHTS',
  kind: 'list',
  schema: {
    type: 'string',
    pattern: `^${ORG_ID}:([1-9][0-9]{0,2}|1000)$`,
    errorMessage: 'must look like "org1:3,org2:1" (weights: whole numbers from 1 to 1000)',
  },
  shownDefault: '(1 each)',
  doc: '`org1:3,org2:1`: slot weight per organisation in fair shares (1–1000)',
  build: (v) => {
    const weights = new Map<string, number>();
    for (const [org, weight] of pairs(v as string[] | undefined)) {
      if (weights.has(org)) throw new ConfigError(`ORG_WEIGHTS names organisation ${org} twice`);
      weights.set(org, Number(weight));
    }
    return weights;
  },
};

const sealingKeys: Setting<readonly SealingKey[]> = {
  env: 'CREDENTIALS_KEYS',
  kind: 'list',
  secret: true,
  schema: {
    type: 'string',
    pattern: '^[A-Za-z0-9._-]{1,64}:[A-Za-z0-9+/]{43}=?$',
    errorMessage: 'must look like "keyid:<base64 of 32 bytes>,..."',
  },
  doc: '`id:<base64 of 32 bytes>,…`: AES-256-GCM keys sealing bucket credentials in events; the first seals, all open. Unset in all-in-one mode: one is made in `$DATA_DIR/credentials-key`',
  build: (v) =>
    Object.freeze(
      ((v as string[] | undefined) ?? []).map((p) => {
        const [id = '', b64 = ''] = p.split(':');
        return { id, key: Buffer.from(b64, 'base64') };
      }),
    ),
};

/** The settings, in the order of docs/configuration.md's table. */
const settings = {
  /** HTTP port of the ingress. */
  port: integer('PORT', {
    default: 8080,
    minimum: 0,
    maximum: 65535,
    doc: 'HTTP port of the ingress',
  }),
  /** Interface the ingress binds (default loopback: not reachable from other machines). */
  host: text('HOST', {
    default: '127.0.0.1',
    doc: 'interface the ingress binds (`0.0.0.0` to serve other machines)',
  }),
  /** API key → organisation id. Empty when unset. */
  apiKeys,
  /** Organisations a job produced straight to the bus may name; undefined: any. */
  knownOrgs,
  /** Kafka bootstrap servers. Empty: all-in-one on the embedded bus. */
  kafkaBrokers: list('KAFKA_BROKERS', {
    items: { type: 'string', pattern: '^[^\\s,]+:\\d{1,5}$' },
    rule: 'must list host:port addresses',
    shownDefault: '(unset)',
    doc: 'Kafka bootstrap servers, comma-separated. Unset: all-in-one mode on the embedded bus',
  }),
  /** Prepended to every Kafka topic name. */
  kafkaTopicPrefix: text('KAFKA_TOPIC_PREFIX', {
    default: '',
    pattern: '^[A-Za-z0-9._-]{0,100}$',
    rule: 'may hold only letters, digits, . _ - (100 at most)',
    doc: 'prepended to every topic name (several environments on one cluster)',
  }),
  /**
   * Partitions of topics created at start: at most this many workers of one kind share the work,
   * and 12 splits evenly over 1, 2, 3, 4, 6 or 12 of them.
   */
  kafkaPartitions: integer('KAFKA_PARTITIONS', {
    default: 12,
    minimum: 1,
    maximum: 1000,
    doc: 'partitions of the topics created at start (missing topics only); at most this many workers of one kind share the work (see Scaling)',
  }),
  /** Replicas of created topics; undefined: 1 on a single broker, 3 on a cluster (its size when smaller). */
  kafkaReplicationFactor: optionalInteger('KAFKA_REPLICATION_FACTOR', {
    minimum: 1,
    maximum: 10,
    shownDefault: '1 on one broker, else 3',
    doc: "replicas of the topics created at start (unset: 1 on a single live broker, else 3, or the cluster's size when smaller, with a warning; set it on a production cluster); an existing topic with fewer refuses the start (KAFKA_ALLOW_LESS_DURABLE_TOPICS)",
  }),
  /** `min.insync.replicas` of created topics and the least existing ones may have; undefined: see the doc. */
  kafkaMinInsyncReplicas: optionalInteger('KAFKA_MIN_INSYNC_REPLICAS', {
    minimum: 1,
    maximum: 10,
    shownDefault: '2 on a cluster',
    doc: '`min.insync.replicas` of the topics created at start: an acknowledged record is on this many brokers (unset: 2 with 3 or more replicas, 1 with 2, none with 1); an existing topic with less refuses the start (KAFKA_ALLOW_LESS_DURABLE_TOPICS)',
  }),
  kafkaAllowLessDurableTopics: flag('KAFKA_ALLOW_LESS_DURABLE_TOPICS', {
    default: false,
    doc: 'start even when existing topics have fewer replicas or a lower min.insync.replicas than configured (logged as a warning)',
  }),
  /**
   * A worker silent this long loses its partitions: the time before a crashed worker's jobs move
   * to another one. Heartbeats do not wait for jobs.
   */
  kafkaSessionTimeoutMs: integer('KAFKA_SESSION_TIMEOUT_MS', {
    default: 15_000,
    minimum: 6000,
    maximum: 300_000,
    doc: "a worker that sends no heartbeat for this long loses its partitions: the time before a crashed worker's jobs move on (heartbeats do not wait for jobs)",
  }),
  /**
   * How long a publish may wait for the brokers' acknowledgement before it fails (the ingress then
   * answers 503, a worker publishes its job's outcome again): longer than the cluster's failover, the
   * time a broker's death takes to be noticed and its partitions led elsewhere (about 9 s on a
   * three-broker KRaft cluster at Kafka's defaults), so that a failover costs latency, not errors.
   */
  kafkaPublishTimeoutMs: integer('KAFKA_PUBLISH_TIMEOUT_MS', {
    default: 15_000,
    minimum: 1000,
    maximum: 120_000,
    doc: "how long a publish waits for the brokers' acknowledgement before it fails (a submission then gets 503 bus_unavailable, or bus_uncertain once its record was sent; a worker tries its job's outcome again): keep it above the cluster's failover time (about 9 s for a broker's death at Kafka's defaults)",
  }),
  /** Job records one worker holds fetched from its partitions, running ones included. */
  kafkaWindowRecords: integer('KAFKA_WINDOW_RECORDS', {
    default: 256,
    minimum: 2,
    maximum: 4000,
    doc: 'job records one worker holds fetched from its partitions, running ones included; a free slot picks fairly among them',
  }),
  orgWeights,
  /** Jobs one organisation runs at once on one worker process (0: no cap). */
  orgMaxRunning: integer('ORG_MAX_RUNNING', {
    default: 0,
    minimum: 0,
    maximum: 1024,
    doc: 'jobs one organisation runs at once on one worker process (0: no cap)',
  }),
  /** How long a rebalancing group waits for a busy worker before handing its jobs to others. */
  kafkaRebalanceTimeoutMs: integer('KAFKA_REBALANCE_TIMEOUT_MS', {
    default: 300_000,
    minimum: 10_000,
    maximum: 3600_000,
    doc: 'how long a rebalance waits for a busy worker to finish its running jobs before dropping it (kafkajs rejoins only between jobs)',
  }),
  /** Confluent-compatible schema registry; set: events are registry-framed. */
  schemaRegistryUrl: httpUrl('SCHEMA_REGISTRY_URL', {
    secret: true, // may carry basic-auth credentials
    doc: 'Confluent-compatible registry (http(s) URL); set: producers register the envelope schema and frame values with its id, consumers read framed and plain values',
  }),
  /** Port of /healthz, /readyz, /metrics of every process, apart from the API (0: any free port). */
  metricsPort: integer('METRICS_PORT', {
    default: 9464,
    minimum: 0,
    maximum: 65535,
    doc: 'port of `/metrics`, `/healthz`, `/readyz` of every process, in every mode (all-in-one, ingress, each worker), on HOST; `/metrics` is never on the API port, whose labels name organisations (0: any free port)',
  }),
  /** Lets caller URLs reach loopback and private networks; link-local and metadata stay refused. */
  allowPrivateNetworks: flag('ALLOW_PRIVATE_NETWORKS', {
    default: false,
    doc: 'let caller URLs reach loopback and private addresses (development, tests); link-local and metadata addresses stay refused',
  }),
  /** Addresses or CIDR ranges caller URLs may reach whatever their class, metadata included. */
  addressAllowList: list('ADDRESS_ALLOW_LIST', {
    items: { type: 'string', format: 'ip-or-cidr' },
    rule: 'must list IP addresses or CIDR ranges (e.g. "169.254.10.5,10.1.0.0/16")',
    shownDefault: '–',
    doc: 'IP addresses or CIDR ranges caller URLs may reach whatever their class, metadata included (comma-separated)',
  }),
  /** Where the embedded bus, first-run secrets and (all-in-one) watermark images live. */
  dataDir: text('DATA_DIR', {
    default: '.data',
    doc: 'embedded bus file, first-run secrets and, in all-in-one mode without other settings, the watermark library (`$DATA_DIR/watermarks`)',
  }),
  maxBodyBytes: integer('MAX_BODY_BYTES', {
    default: MiB,
    minimum: KiB,
    maximum: 64 * MiB,
    doc: 'largest request body',
  }),
  /** Requests per second one API key may make on average, per ingress copy; 0: no limit. */
  rateLimitPerSecond: integer('RATE_LIMIT_PER_SECOND', {
    default: 20,
    minimum: 0,
    maximum: 1_000_000,
    doc: 'requests per second one API key may make on average, per ingress copy (token bucket; 429 `rate_limited` with `Retry-After`); 0: no limit',
  }),
  /** Requests one API key may make at once after a quiet spell (the bucket size). */
  rateLimitBurst: integer('RATE_LIMIT_BURST', {
    default: 40,
    minimum: 1,
    maximum: 1_000_000,
    doc: 'requests one API key may make at once after a quiet spell (the bucket size)',
  }),
  /** Jobs one organisation may have queued or running at once; 0: no cap. */
  maxActiveJobsPerOrg: integer('MAX_ACTIVE_JOBS_PER_ORG', {
    default: 1000,
    minimum: 0,
    maximum: 10_000_000,
    doc: 'jobs one organisation may have queued or running (429 `too_many_jobs`); 0: no cap. See Limits',
  }),
  maxInputBytes: integer('MAX_INPUT_BYTES', {
    default: 4 * GiB,
    minimum: KiB,
    maximum: 1024 * GiB,
    doc: 'largest input file downloaded',
  }),
  jobTimeoutMs: integer('JOB_TIMEOUT_MS', {
    default: 30 * 60_000,
    minimum: 1000,
    maximum: 24 * 3600_000,
    doc: 'longest one job attempt may run',
  }),
  stallTimeoutMs: integer('STALL_TIMEOUT_MS', {
    default: 60_000,
    minimum: 1000,
    maximum: 3600_000,
    doc: 'ffmpeg without progress for this long is killed',
  }),
  /**
   * ffmpeg (CPU) slots of one worker process: jobs encoding at once. 0: one per core, each ffmpeg
   * given every core (the runtime resolves it: create-runtime.ts `cpuPlan`).
   */
  workerConcurrency: integer('WORKER_CONCURRENCY', {
    default: 0,
    minimum: 0,
    maximum: 64,
    doc: 'ffmpeg (CPU) slots of one worker process: jobs encoding at once. 0: one per core, each ffmpeg with threads for every core (a lone job uses them all, a backlog keeps them busy); N: N slots, ffmpeg threads = cores / N',
  }),
  /** Downloads and uploads one worker process runs at once, apart from the CPU slots. */
  transferConcurrency: integer('TRANSFER_CONCURRENCY', {
    default: 2,
    minimum: 1,
    maximum: 64,
    doc: 'downloads and uploads one worker process runs at once, apart from the CPU slots; a worker takes up to its CPU slots + this many jobs',
  }),
  /** Largest frame area, in pixels, of an input or an output (default 8K UHD). */
  maxPixels: integer('MAX_PIXELS', {
    default: 7680 * 4320,
    minimum: 64 * 64,
    maximum: 16384 * 16384,
    doc: 'largest frame area (width × height) of an input or an output; default 7680×4320, 8K UHD',
  }),
  /** RLIMIT_DATA of every ffmpeg and ffprobe, in bytes. */
  ffmpegMemoryLimitBytes: integer('FFMPEG_MEMORY_LIMIT_BYTES', {
    default: 2 * GiB,
    minimum: 64 * MiB,
    maximum: 1024 * GiB,
    doc: 'data-segment limit (`prlimit --data`) of every ffmpeg and ffprobe',
  }),
  /** A transfer slower than this over one window is cut, bytes/s (0: no floor). */
  minTransferBytesPerSecond: integer('MIN_TRANSFER_BYTES_PER_SECOND', {
    default: 16_384,
    minimum: 0,
    maximum: GiB,
    doc: 'a download or upload that moves less than this per second over one window is cut (0: no floor)',
  }),
  transferRateWindowMs: integer('TRANSFER_RATE_WINDOW_MS', {
    default: 30_000,
    minimum: 100,
    maximum: 3600_000,
    doc: 'the window of the transfer rate floor',
  }),
  /** Root of the job work directories; unset: `<os tmpdir>/media-service/<service>`. */
  workDir: optionalText('WORK_DIR', {
    shownDefault: '(unset: `<os tmpdir>/media-service/<service>`)',
    doc: 'root of the job work directories; dirs of dead processes are removed at start',
  }),
  maxJobAttempts: integer('MAX_JOB_ATTEMPTS', {
    default: 3,
    minimum: 1,
    maximum: 20,
    doc: 'attempts for retryable failures',
  }),
  /** Backoff ceiling before the 2nd attempt, doubled each time (full jitter below it). */
  retryBackoffMs: integer('RETRY_BACKOFF_MS', {
    default: 5000,
    minimum: 0,
    maximum: 3600_000,
    doc: 'ceiling of the random wait before attempt 2, doubled each time',
  }),
  retryBackoffMaxMs: integer('RETRY_BACKOFF_MAX_MS', {
    default: 300_000,
    minimum: 0,
    maximum: 24 * 3600_000,
    doc: 'cap of that ceiling',
  }),
  /** Standard Webhooks signing secrets (`whsec_…` strings) by organisation. Empty when unset. */
  webhookSecrets,
  /** Lets a notifier without any signing secret start and send callbacks unsigned. */
  allowUnsignedCallbacks: flag('ALLOW_UNSIGNED_CALLBACKS', {
    default: false,
    doc: 'let a notifier run on its own without `WEBHOOK_SECRETS` and send callbacks without `webhook-signature`; unset, it refuses to start (all-in-one mode signs with its first-run secret)',
  }),
  callbackTimeoutMs: integer('CALLBACK_TIMEOUT_MS', {
    default: 10_000,
    minimum: 100,
    maximum: 120_000,
    doc: 'time-out of one callback attempt',
  }),
  /** Base of the callback backoff: before attempt n + 1, random in [0, min(base × 2^(n-1), max)]. */
  callbackBackoffMs: integer('CALLBACK_BACKOFF_MS', {
    default: 1000,
    minimum: 0,
    maximum: 3600_000,
    doc: 'base of the callback backoff: attempt n + 1 waits a random 0 – min(this × 2^(n−1), CALLBACK_BACKOFF_MAX_MS)',
  }),
  callbackBackoffMaxMs: integer('CALLBACK_BACKOFF_MAX_MS', {
    default: 3600_000,
    minimum: 0,
    maximum: 24 * 3600_000,
    doc: 'cap of one callback backoff (a longer `Retry-After` still wins)',
  }),
  /** A callback is retried until this long after its first attempt, then given up. */
  callbackRetryHorizonMs: integer('CALLBACK_RETRY_HORIZON_MS', {
    default: 24 * 3600_000,
    minimum: 0,
    // Seven days at most: the embedded bus and Kafka's default retention keep records that long.
    maximum: 7 * 24 * 3600_000,
    doc: 'a callback is retried until this long after its first attempt, then given up and dead-lettered (at most 7 days). Replaces `CALLBACK_MAX_ATTEMPTS` (refused at start if set)',
  }),
  callbackConcurrency: integer('CALLBACK_CONCURRENCY', {
    default: 16,
    minimum: 1,
    maximum: 256,
    doc: 'callback attempts one notifier process makes at once',
  }),
  /** Callback attempts to one host at once, so a slow receiver holds few of the slots. */
  callbackMaxInFlightPerHost: integer('CALLBACK_MAX_IN_FLIGHT_PER_HOST', {
    default: 2,
    minimum: 1,
    maximum: 256,
    doc: 'callback attempts one notifier process makes at once to one host',
  }),
  /** Keys that seal credentials in events; the first seals. */
  sealingKeys,
  shutdownGraceMs: integer('SHUTDOWN_GRACE_MS', {
    default: 30_000,
    minimum: 0,
    maximum: 3600_000,
    doc: 'time running jobs get to finish after SIGTERM/SIGINT before they are handed back',
  }),
  /** S3-compatible endpoint instead of AWS (path-style addressing then). */
  s3Endpoint: httpUrl('S3_ENDPOINT', {
    shownDefault: '(unset: AWS)',
    doc: 'S3-compatible endpoint for `s3://` URLs (MinIO, Ceph, an emulator); path-style addressing then',
  }),
  /** Azure blob endpoint template, `{accountName}` replaced. */
  azureBlobEndpoint: httpUrl('AZURE_BLOB_ENDPOINT', {
    also: '(?=.*\\{accountName\\})',
    rule: 'must be an http(s) URL with {accountName} in it',
    shownDefault: '(unset: `https://{accountName}.blob.core.windows.net`)',
    doc: 'blob endpoint template for `azure://` URLs; `{accountName}` is replaced',
  }),
  /** Google Cloud Storage API endpoint instead of Google's. */
  gcsApiEndpoint: httpUrl('GCS_API_ENDPOINT', {
    shownDefault: '(unset: Google)',
    doc: 'Cloud Storage API endpoint for `gcp://` URLs (an emulator)',
  }),
  /** Folder of named watermark images, `<dir>/<orgId>/<name>`. */
  watermarkImagesDir: optionalText('WATERMARK_IMAGES_DIR', {
    shownDefault: '(unset; all-in-one: `$DATA_DIR/watermarks`)',
    doc: 'folder of the watermark library, `<dir>/<org>/<imageName>`; every ingress and worker copy must see the same folder. Ignored when WATERMARK_BUCKET is set',
  }),
  /** S3-compatible bucket of named watermark images, `<orgId>/<name>` keys. */
  watermarkBucket: optionalText('WATERMARK_BUCKET', {
    pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
    rule: 'must be an S3 bucket name (3-63 lower-case letters, digits, . -)',
    doc: 'S3-compatible bucket of the watermark library (keys `<org>/<imageName>`), read by every ingress and worker copy; the way to share it on Kafka',
  }),
  /** Endpoint of the watermark bucket; unset: S3_ENDPOINT, else AWS. */
  watermarkS3Endpoint: httpUrl('WATERMARK_S3_ENDPOINT', {
    shownDefault: '(S3_ENDPOINT)',
    doc: 'S3-compatible endpoint of WATERMARK_BUCKET (path-style addressing then); unset: S3_ENDPOINT, else AWS',
  }),
  watermarkS3Region: text('WATERMARK_S3_REGION', {
    default: 'us-east-1',
    pattern: '^[a-z0-9-]{2,32}$',
    rule: 'must be a region name (a-z, 0-9, -)',
    doc: 'region of WATERMARK_BUCKET',
  }),
  /** Access key of the watermark bucket; unset: the AWS SDK's default chain (role, AWS_* variables). */
  watermarkS3AccessKeyId: optionalText('WATERMARK_S3_ACCESS_KEY_ID', {
    shownDefault: '(unset: the AWS SDK default chain)',
    doc: 'access key id for WATERMARK_BUCKET; unset: the instance role or `AWS_*` variables',
  }),
  watermarkS3SecretAccessKey: optionalText('WATERMARK_S3_SECRET_ACCESS_KEY', {
    secret: true,
    shownDefault: '(unset)',
    doc: 'secret access key for WATERMARK_BUCKET (with WATERMARK_S3_ACCESS_KEY_ID)',
  }),
  /** Largest watermark image accepted by PUT /watermarks/:name, in bytes. */
  watermarkMaxBytes: integer('WATERMARK_MAX_BYTES', {
    default: 2 * MiB,
    minimum: KiB,
    // The workers' cap on any watermark image they read.
    maximum: 10 * MiB,
    doc: 'largest watermark image `PUT /watermarks/:name` accepts (at most 10 MiB)',
  }),
  /** Widest watermark image accepted, in pixels. */
  watermarkMaxWidth: integer('WATERMARK_MAX_WIDTH', {
    default: 4096,
    minimum: 1,
    maximum: 16384,
    doc: 'widest watermark image accepted, in pixels',
  }),
  /** Tallest watermark image accepted, in pixels. */
  watermarkMaxHeight: integer('WATERMARK_MAX_HEIGHT', {
    default: 4096,
    minimum: 1,
    maximum: 16384,
    doc: 'tallest watermark image accepted, in pixels',
  }),
  ffmpegPath: text('FFMPEG_PATH', { default: 'ffmpeg', doc: 'ffmpeg binary' }),
  ffprobePath: text('FFPROBE_PATH', { default: 'ffprobe', doc: 'ffprobe binary' }),
  /**
   * An ffmpeg with libvmaf for the VMAF of the quality report, relative to the working directory;
   * a missing file or one without libvmaf leaves VMAF out of the reports (warned at start).
   */
  vmafFfmpegPath: text('VMAF_FFMPEG', {
    default: '.cache/tools/ffmpeg-vmaf/ffmpeg',
    doc: 'an ffmpeg with libvmaf, for the VMAF of the quality report (relative to the working directory). Missing, or without libvmaf: reports carry PSNR and SSIM only and say why, with a warning at start',
  }),
  /** The quality report scores every n-th output frame with VMAF. */
  qualityVmafSubsample: integer('QUALITY_VMAF_SUBSAMPLE', {
    default: 4,
    minimum: 1,
    maximum: 100,
    doc: "the quality report scores every n-th frame with VMAF (1: every frame). At 4 the mean stays within 0.1 of every frame's and the report costs about a third of an x264 `medium` encode's CPU instead of about four fifths; PSNR and SSIM always measure every frame",
  }),
  /** Font for text watermarks. */
  fontFile: text('FONT_FILE', {
    default: '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf',
    doc: 'font of text watermarks',
  }),
  logLevel: oneOf<LogLevel>('LOG_LEVEL', ['debug', 'info', 'warn', 'error', 'silent'], {
    default: 'info',
    doc: 'debug, info, warn, error, silent',
  }),
  // Span export: the standard OpenTelemetry variables, combined into `traceExport` (tracing.ts).
  otelTracesExporter: optionalText('OTEL_TRACES_EXPORTER', {
    pattern: '^(otlp|none)$',
    rule: 'must be otlp or none',
    doc: '`otlp` turns span export on (to `http://localhost:4318/v1/traces` unless an endpoint is set), `none` turns it off. Unset: on exactly when an endpoint below is set',
  }),
  otelEndpoint: httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', {
    secret: true,
    doc: 'OTLP/HTTP collector base URL; spans go to `<it>/v1/traces`. Setting it turns tracing on',
  }),
  otelTracesEndpoint: httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', {
    secret: true,
    doc: 'full traces URL, used as is (wins over the one above)',
  }),
  otelProtocol: oneOf('OTEL_EXPORTER_OTLP_PROTOCOL', ['http/protobuf', 'http/json'], {
    default: 'http/protobuf',
    doc: '`http/protobuf` or `http/json` (`grpc` is refused)',
  }),
  otelTracesProtocol: optionalText('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', {
    pattern: '^http/(protobuf|json)$',
    rule: 'must be http/protobuf or http/json',
    doc: 'as above, for traces only (wins over it)',
  }),
  otelServiceName: optionalText('OTEL_SERVICE_NAME', {
    shownDefault: '`media-<service>`',
    doc: '`service.name` of the spans (`media-ingress`, `media-transcoder`, `media-summarizer`, `media-notifier`, `media-all-in-one`)',
  }),
  otelResourceAttributes: optionalText('OTEL_RESOURCE_ATTRIBUTES', {
    pattern: '^\\s*[^=,\\s]+\\s*=[^,]+(,\\s*[^=,\\s]+\\s*=[^,]+)*$',
    rule: 'must look like "key1=value1,key2=value2"',
    doc: "`key=value,…` (values percent-encoded) added to the spans' resource, e.g. `deployment.environment=prod`",
  }),
  otelTracesSampler: oneOf('OTEL_TRACES_SAMPLER', SAMPLERS, {
    default: 'parentbased_always_on',
    doc: SAMPLERS.map((s) => `\`${s}\``).join(', '),
  }),
  otelTracesSamplerArg: optionalText('OTEL_TRACES_SAMPLER_ARG', {
    pattern: '^(0(\\.\\d+)?|1(\\.0+)?)$',
    rule: 'must be a ratio from 0 to 1',
    shownDefault: '1',
    doc: 'ratio (0–1) of the `traceidratio` samplers',
  }),
  otelSdkDisabled: flag('OTEL_SDK_DISABLED', {
    default: false,
    doc: '`true`: no span export whatever the variables above say (trace context is still passed on)',
  }),
};

/**
 * Span export from the OTEL_* settings; undefined (the default): no export. The exporter itself
 * also reads its own OTEL_EXPORTER_OTLP_*HEADERS, *TIMEOUT, *COMPRESSION and certificate variables.
 */
function traceExportOf(c: SettingsValues<typeof settings>): TraceExportSettings | undefined {
  const endpoint = c.otelTracesEndpoint ?? c.otelEndpoint;
  const on =
    c.otelTracesExporter === 'otlp' ||
    (c.otelTracesExporter === undefined && endpoint !== undefined);
  if (!on || c.otelSdkDisabled) return undefined;
  const resourceAttributes: Record<string, string> = {};
  for (const pair of (c.otelResourceAttributes ?? '').split(',').filter((p) => p.trim())) {
    const at = pair.indexOf('=');
    try {
      resourceAttributes[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new ConfigError('OTEL_RESOURCE_ATTRIBUTES has a value that is not percent-encoded');
    }
  }
  return Object.freeze({
    url:
      c.otelTracesEndpoint ??
      `${(c.otelEndpoint ?? 'http://localhost:4318').replace(/\/+$/, '')}/v1/traces`,
    protocol: (c.otelTracesProtocol ?? c.otelProtocol) as TraceExportSettings['protocol'],
    serviceName: c.otelServiceName,
    resourceAttributes: Object.freeze(resourceAttributes),
    sampler: { name: c.otelTracesSampler, ratio: Number(c.otelTracesSamplerArg ?? '1') },
  });
}

/** The service's settings, read once from the environment at start, validated and frozen. */
export type Config = SettingsValues<typeof settings> & {
  /** Span export, combined from the OTEL_* settings (see traceExportOf). */
  traceExport: TraceExportSettings | undefined;
};

// Settings that were removed: starting with them set would silently change what callers get.
const RETIRED: Record<string, string> = {
  CALLBACK_SIGNING_SECRET:
    'WEBHOOK_SECRETS (Standard Webhooks signatures, one secret per organisation)',
  CALLBACK_MAX_ATTEMPTS:
    'CALLBACK_RETRY_HORIZON_MS (callbacks are retried for a time, not a count)',
  INGRESS_METRICS_PORT:
    'METRICS_PORT (the port of /metrics, /healthz and /readyz of every process, the ingress too)',
};

const load = compileSettings(settings);

export function loadConfig(env: Env): Readonly<Config> {
  for (const [name, by] of Object.entries(RETIRED))
    if (env[name] !== undefined) throw new ConfigError(`${name} is no longer read; use ${by}`);
  const values = load(env);
  return Object.freeze({ ...values, traceExport: traceExportOf(values) });
}

/** Reads one variable's value by its declaration (e.g. for a tool that needs only that one). */
function loadOne<K extends keyof typeof settings>(field: K, raw: string | undefined): Config[K] {
  const setting = settings[field] as Setting<unknown>;
  const values = compileSettings({ value: setting })({ [setting.env]: raw });
  return values.value as Config[K];
}

export function parseApiKeys(raw: string | undefined): ReadonlyMap<string, string> {
  return loadOne('apiKeys', raw);
}

export function parseSealingKeys(raw: string | undefined): readonly SealingKey[] {
  return loadOne('sealingKeys', raw);
}

/** docs/configuration.md's table, rendered from the declarations (unformatted markdown). */
export function configTable(): string {
  return settingsTable(settings);
}

/** The variables the configuration reads, in the order of docs/configuration.md. */
export const configVariables: readonly string[] = Object.values(settings).map((s) => s.env);
