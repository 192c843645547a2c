// gcp:// against fake-gcs-server from scripts/test-services. The SDK sends no credentials to a
// custom endpoint and the emulator checks none, so refused credentials are not tested here.
// Both upload kinds run the whole suite: resumable (sessions) and simple (one multipart request).
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { Storage } from '@google-cloud/storage';
import { MediaError } from '../../../services/core/errors.ts';
import {
  createGcsStoreFactory,
  type GcsStoreOptions,
} from '../../../services/core/storage/gcs-store.ts';
import {
  closedPort,
  describeMediaStore,
  randomName,
  requireEnv,
  type StoreHarness,
} from './media-store-suite.ts';

const PROJECT = 'test-project';

/** A well-formed service-account key document; the emulator never checks it. */
function serviceAccount(): Record<string, string> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    type: 'service_account',
    project_id: PROJECT,
    private_key_id: 'test-key',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: `tester@${PROJECT}.iam.gserviceaccount.com`,
  };
}

async function gcsHarness(options: GcsStoreOptions): Promise<StoreHarness> {
  const apiEndpoint = requireEnv('TEST_GCS_ENDPOINT');
  const admin = new Storage({ apiEndpoint, projectId: process.env.TEST_GCS_PROJECT || PROJECT });
  const credentials = serviceAccount();
  const resumable = options.resumableThresholdBytes === 0;
  return {
    store: createGcsStoreFactory({ ...options, apiEndpoint })(credentials),
    createBucket: async () => {
      const name = randomName('gcst');
      const [bucket] = await admin.createBucket(name);
      return {
        url: (key) => `gcp://${name}/${key}`,
        // fake-gcs-server ignores a resumable session's X-Upload-Content-Type (real GCS keeps it)
        // and stores the data request's type instead, so only simple uploads can be checked.
        ...(!resumable && {
          contentType: async (key: string) => (await bucket.file(key).getMetadata())[0].contentType,
        }),
        remove: async () => {
          await bucket.deleteFiles({ force: true });
          await bucket.delete();
        },
      };
    },
    missingBucketUrl: (key) => `gcp://${randomName('nobucket')}/${key}`,
    unreachable: {
      store: createGcsStoreFactory({
        apiEndpoint: `http://127.0.0.1:${await closedPort()}`,
        maxRetries: 0,
      })(credentials),
      url: (key) => `gcp://${randomName('gcst')}/${key}`,
    },
  };
}

describeMediaStore('gcp (fake-gcs-server), resumable uploads', () =>
  gcsHarness({ resumableThresholdBytes: 0 }),
);
describeMediaStore('gcp (fake-gcs-server), simple uploads', () =>
  gcsHarness({ resumableThresholdBytes: Number.POSITIVE_INFINITY }),
);

describe('gcs store specifics', () => {
  const never = new AbortController().signal;

  it('refuses credentials that are not a service-account key, without a request', async () => {
    const factory = createGcsStoreFactory({ apiEndpoint: requireEnv('TEST_GCS_ENDPOINT') });
    const external = {
      type: 'external_account',
      project_id: PROJECT,
      private_key: 'x',
      client_email: 'a@b',
      credential_source: { file: '/etc/passwd' },
    };
    for (const credentials of [undefined, {}, external, { ...serviceAccount(), private_key: '' }]) {
      const error = await factory(credentials)
        .download('gcp://some-bucket/a.mp4', '/nonexistent/x', { signal: never, maxBytes: 10 })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(MediaError);
      expect((error as MediaError).code).to.equal('input_rejected');
    }
  });
});
