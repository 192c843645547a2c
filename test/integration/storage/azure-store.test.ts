// azure:// against Azurite from scripts/test-services. Azurite checks Shared Key signatures,
// so refused credentials are tested here.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { MediaError } from '../../../services/core/errors.ts';
import {
  createAzureStoreFactory,
  type AzureStoreOptions,
} from '../../../services/core/storage/azure-store.ts';
import {
  closedPort,
  describeMediaStore,
  randomName,
  requireEnv,
  type StoreHarness,
} from './media-store-suite.ts';

function azureSettings() {
  const blobEndpoint = requireEnv('TEST_AZURE_BLOB_ENDPOINT');
  const credentials = {
    accountName: requireEnv('TEST_AZURE_ACCOUNT'),
    accountKey: requireEnv('TEST_AZURE_KEY'),
  };
  return { blobEndpoint, credentials };
}

async function azureHarness(
  options: (blobEndpoint: string, accountName: string) => AzureStoreOptions,
): Promise<StoreHarness> {
  const { blobEndpoint, credentials } = azureSettings();
  const admin = new BlobServiceClient(
    blobEndpoint,
    new StorageSharedKeyCredential(credentials.accountName, credentials.accountKey),
  );
  const factory = createAzureStoreFactory(options(blobEndpoint, credentials.accountName));
  const deadEndpoint = `http://127.0.0.1:${await closedPort()}/${credentials.accountName}`;
  // Same account, another key: Azurite answers 403 AuthorizationFailure.
  const wrongKey = randomBytes(64).toString('base64');
  return {
    store: factory(credentials),
    createBucket: async () => {
      const name = randomName('azt');
      const container = admin.getContainerClient(name);
      await container.create();
      return {
        url: (key) => `azure://${name}/${key}`,
        contentType: async (key) =>
          (await container.getBlobClient(key).getProperties()).contentType,
        remove: async () => void (await container.delete()),
      };
    },
    missingBucketUrl: (key) => `azure://${randomName('nocontainer')}/${key}`,
    unreachable: {
      store: createAzureStoreFactory({ blobEndpoint: deadEndpoint, maxAttempts: 1 })(credentials),
      url: (key) => `azure://${randomName('azt')}/${key}`,
    },
    wrongCredentials: {
      store: factory({ ...credentials, accountKey: wrongKey }),
      secrets: [wrongKey, credentials.accountKey],
    },
  };
}

describeMediaStore(
  'azure (Azurite), fixed blob endpoint, single-request uploads',
  () => azureHarness((blobEndpoint) => ({ blobEndpoint })),
  { checksCredentials: true },
);

describeMediaStore(
  'azure (Azurite), endpoint template, block uploads',
  () =>
    azureHarness((blobEndpoint, accountName) => ({
      // Azurite addresses accounts by path; the template stands in for https://{accountName}.blob.core.windows.net.
      endpointTemplate: blobEndpoint.replace(new RegExp(`/${accountName}$`), '/{accountName}'),
      singleUploadMaxBytes: 1024 * 1024,
      blockSizeBytes: 1024 * 1024,
    })),
  { checksCredentials: true },
);

describe('azure store specifics', () => {
  const never = new AbortController().signal;

  it('refuses account names that could change the endpoint host, without a request', async () => {
    azureSettings();
    const factory = createAzureStoreFactory({});
    for (const accountName of ['evil.example.com#', 'UPPER', 'ab', undefined]) {
      const error = await factory({ accountName, accountKey: 'a2V5' })
        .download('azure://container/a.mp4', '/nonexistent/x', { signal: never, maxBytes: 10 })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(MediaError);
      expect((error as MediaError).code).to.equal('input_rejected');
    }
  });
});
