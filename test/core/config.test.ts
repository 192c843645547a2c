import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  ConfigError,
  loadConfig,
  parseApiKeys,
  parseSealingKeys,
} from '../../services/core/config.ts';

describe('config', () => {
  describesHasSafeDefaultsLoopback();

  describesNamesVariableRuleValue();
});

function describesHasSafeDefaultsLoopback(): void {
  it('has safe defaults: loopback, no keys, private networks refused', () => {
    const config = loadConfig({});
    expect(config).to.include({
      host: '127.0.0.1',
      port: 8080,
      allowPrivateNetworks: false,
      workerConcurrency: 0,
    });
    expect(config.apiKeys.size).to.equal(0);
    expect(config.sealingKeys).to.have.length(0);
    expect(Object.isFrozen(config)).to.equal(true);
  });

  it('parses keys with their organisations and refuses short or malformed ones', () => {
    expect([...parseApiKeys('aaaaaaaaaaaaaaaa:org1, bbbbbbbbbbbbbbbb:org-2')]).to.deep.equal([
      ['aaaaaaaaaaaaaaaa', 'org1'],
      ['bbbbbbbbbbbbbbbb', 'org-2'],
    ]);
    expect(() => parseApiKeys('short:org')).to.throw(ConfigError, /at least 16/);
    expect(() => parseApiKeys('aaaaaaaaaaaaaaaa')).to.throw(ConfigError, /key1:org1/);
    expect(parseSealingKeys(`k1:${Buffer.alloc(32).toString('base64')}`)[0]?.id).to.equal('k1');
    expect(() => parseSealingKeys('k1:c2hvcnQ=')).to.throw(ConfigError, /32 bytes/);
  });

  it('reads the request and job limits (0 turns each off) and refuses a burst of 0', () => {
    expect(loadConfig({})).to.include({
      rateLimitPerSecond: 20,
      rateLimitBurst: 40,
      maxActiveJobsPerOrg: 1000,
    });
    expect(
      loadConfig({
        RATE_LIMIT_PER_SECOND: '0',
        RATE_LIMIT_BURST: '5',
        MAX_ACTIVE_JOBS_PER_ORG: '0',
      }),
    ).to.include({ rateLimitPerSecond: 0, rateLimitBurst: 5, maxActiveJobsPerOrg: 0 });
    expect(() => loadConfig({ RATE_LIMIT_BURST: '0' })).to.throw(ConfigError, /RATE_LIMIT_BURST/);
  });
}

function describesNamesVariableRuleValue(): void {
  it('names the variable and the rule when a value is wrong', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).to.throw(
      ConfigError,
      /PORT must be a whole number/,
    );
    expect(() => loadConfig({ WORKER_CONCURRENCY: '65' })).to.throw(
      ConfigError,
      /WORKER_CONCURRENCY must be between 0 and 64/,
    );
    expect(() => loadConfig({ ALLOW_PRIVATE_NETWORKS: 'yes' })).to.throw(
      ConfigError,
      /true or false/,
    );
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).to.throw(ConfigError, /LOG_LEVEL/);
    expect(() => loadConfig({ S3_ENDPOINT: 'minio:9000' })).to.throw(
      ConfigError,
      /S3_ENDPOINT must be an http\(s\) URL/,
    );
    expect(() => loadConfig({ KAFKA_TOPIC_PREFIX: 'a b' })).to.throw(
      ConfigError,
      /KAFKA_TOPIC_PREFIX/,
    );
  });

  it('a service started with a bad or missing setting exits 2 with one line on stderr', async function () {
    this.timeout(60_000);
    const run = promisify(execFile);
    const main = (s: string): string =>
      new URL(`../../services/${s}/main.ts`, import.meta.url).pathname;
    const cases: [string, Record<string, string>, RegExp][] = [
      ['all-in-one', { PORT: '-1' }, /configuration error: PORT must be a whole number/],
      ['ingress', {}, /KAFKA_BROKERS is required for the ingress on its own/],
      ['ingress', { KAFKA_BROKERS: '127.0.0.1:1' }, /CREDENTIALS_KEYS is required/],
      [
        'ingress',
        {
          KAFKA_BROKERS: '127.0.0.1:1',
          CREDENTIALS_KEYS: `k:${Buffer.alloc(32).toString('base64')}`,
        },
        /API_KEYS is required/,
      ],
      ['transcoder', { KAFKA_BROKERS: '127.0.0.1:1' }, /CREDENTIALS_KEYS is required/],
    ];
    for (const [service, env, message] of cases) {
      const error = (await run(process.execPath, [main(service)], {
        env: { PATH: process.env['PATH'] ?? '', ...env },
      }).then(
        () => undefined,
        (e: unknown) => e,
      )) as { code: number; stderr: string } | undefined;
      expect(error?.code, service).to.equal(2);
      expect(error?.stderr).to.match(message);
    }
  });
}

describe('config: callbacks', () => {
  const secret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;

  it('reads per-organisation Standard Webhooks secrets and the retry settings', () => {
    const config = loadConfig({
      WEBHOOK_SECRETS: `org1:${secret}, org-2:${secret}`,
      CALLBACK_RETRY_HORIZON_MS: '60000',
      CALLBACK_MAX_IN_FLIGHT_PER_HOST: '3',
    });
    expect([...config.webhookSecrets.keys()]).to.deep.equal(['org1', 'org-2']);
    expect(config).to.include({
      callbackRetryHorizonMs: 60_000,
      callbackMaxInFlightPerHost: 3,
      callbackConcurrency: 16,
      callbackBackoffMaxMs: 3600_000,
    });
    expect(loadConfig({}).webhookSecrets.size).to.equal(0);
  });

  it('refuses a malformed secret, naming the variable but not echoing the value', () => {
    for (const bad of [
      'org1:whsec_c2hvcnQ=',
      `org1:${secret.slice(6)}`,
      `:${secret}`,
      `org1:${secret},org1:${secret}`,
    ]) {
      let message = '';
      try {
        loadConfig({ WEBHOOK_SECRETS: bad });
      } catch (error) {
        expect(error).to.be.instanceOf(ConfigError);
        message = (error as Error).message;
      }
      expect(message, bad).to.match(/WEBHOOK_SECRETS/);
      expect(message).to.not.contain(secret.slice(6, 20));
    }
  });

  it('refuses the settings it replaced, saying what replaces them', () => {
    expect(() => loadConfig({ CALLBACK_SIGNING_SECRET: 'x' })).to.throw(
      ConfigError,
      /CALLBACK_SIGNING_SECRET is no longer read; use WEBHOOK_SECRETS/,
    );
    expect(() => loadConfig({ CALLBACK_MAX_ATTEMPTS: '6' })).to.throw(
      ConfigError,
      /CALLBACK_RETRY_HORIZON_MS/,
    );
  });
});

describe('config: declared once', () => {
  it('validates the endpoints it used to take as they came', () => {
    expect(() => loadConfig({ SCHEMA_REGISTRY_URL: 'registry:8081' })).to.throw(
      ConfigError,
      /^SCHEMA_REGISTRY_URL must be an http\(s\) URL$/,
    );
    // A registry URL may carry basic-auth credentials: the message does not repeat it.
    expect(() => loadConfig({ SCHEMA_REGISTRY_URL: 'ftp://user:pw@host' })).to.throw(
      ConfigError,
      /^[^:]*URL$/,
    );
    expect(() =>
      loadConfig({ AZURE_BLOB_ENDPOINT: 'http://127.0.0.1:10000/devstoreaccount1' }),
    ).to.throw(
      ConfigError,
      /AZURE_BLOB_ENDPOINT must be an http\(s\) URL with \{accountName\} in it/,
    );
    expect(() => loadConfig({ AZURE_BLOB_ENDPOINT: 'blob.local/{accountName}' })).to.throw(
      ConfigError,
      /AZURE_BLOB_ENDPOINT/,
    );
    const config = loadConfig({
      SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081/apis/ccompat/v7',
      AZURE_BLOB_ENDPOINT: 'http://127.0.0.1:10000/{accountName}',
    });
    expect(config.schemaRegistryUrl).to.equal('http://127.0.0.1:8081/apis/ccompat/v7');
    expect(config.azureBlobEndpoint).to.equal('http://127.0.0.1:10000/{accountName}');
    expect(loadConfig({}).azureBlobEndpoint).to.equal(undefined);
  });

  it('checks every kind through the one validator, naming the variable', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ KAFKA_BROKERS: 'broker-without-port' }, /^KAFKA_BROKERS must list host:port/],
      [{ ADDRESS_ALLOW_LIST: '10.0.0.1, not-an-ip' }, /ADDRESS_ALLOW_LIST .*got "not-an-ip"/],
      [{ KNOWN_ORGS: 'ok,.hidden' }, /KNOWN_ORGS must list organisation ids/],
      [
        { WATERMARK_MAX_BYTES: '20000000' },
        /WATERMARK_MAX_BYTES must be between 1024 and 10485760/,
      ],
      [{ WATERMARK_BUCKET: 'Bad_Bucket' }, /WATERMARK_BUCKET must be an S3 bucket name/],
      [{ CALLBACK_RETRY_HORIZON_MS: '1e9' }, /CALLBACK_RETRY_HORIZON_MS must be a whole number/],
    ];
    for (const [env, message] of cases)
      expect(() => loadConfig(env), message.source).to.throw(ConfigError, message);
  });

  it('empty means unset, and defaults come from the declaration', () => {
    const config = loadConfig({ PORT: '', KAFKA_BROKERS: ' , ', WATERMARK_S3_REGION: '' });
    expect(config).to.include({
      port: 8080,
      watermarkS3Region: 'us-east-1',
      watermarkMaxWidth: 4096,
    });
    expect(config.kafkaBrokers).to.deep.equal([]);
    expect(config.knownOrgs).to.equal(undefined);
    expect([...(loadConfig({ API_KEYS: 'aaaaaaaaaaaaaaaa:org1' }).knownOrgs ?? [])]).to.deep.equal([
      'org1',
    ]);
  });

  it('never repeats a secret in a message', () => {
    const key = 'sixteen-chars-key-that-is-secret';
    for (const env of [
      { API_KEYS: `${key}:.bad` },
      { CREDENTIALS_KEYS: `k1:${key}` },
      { WATERMARK_S3_SECRET_ACCESS_KEY: '', WEBHOOK_SECRETS: `org:whsec_${key}` },
    ]) {
      let message = '';
      try {
        loadConfig(env);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).to.match(/^[A-Z_]+ /);
      expect(message).to.not.contain(key);
    }
  });
});

describe('config: fair shares', () => {
  it('reads organisation weights and the per-worker cap, and refuses malformed ones', () => {
    const c = loadConfig({ ORG_WEIGHTS: 'acme:3, beta:1', ORG_MAX_RUNNING: '2' });
    expect(Object.fromEntries(c.orgWeights)).to.deep.equal({ acme: 3, beta: 1 });
    expect(c.orgMaxRunning).to.equal(2);
    expect(loadConfig({}).orgWeights.size).to.equal(0);
    expect(() => loadConfig({ ORG_WEIGHTS: 'acme:0' })).to.throw(/ORG_WEIGHTS/);
    expect(() => loadConfig({ ORG_WEIGHTS: 'acme' })).to.throw(/ORG_WEIGHTS/);
    expect(() => loadConfig({ ORG_WEIGHTS: 'acme:1,acme:2' })).to.throw(/twice/);
  });
});
