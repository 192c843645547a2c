import { S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { Storage } from '@google-cloud/storage';
import { requireEnv } from './kafka-stack.ts';

/** The storage emulators of the test services (moto, Azurite, fake-gcs-server) and admin clients. */
export interface StorageEmulators {
  s3Endpoint: string;
  azureEndpoint: string;
  azureAccount: string;
  azureKey: string;
  gcsEndpoint: string;
  /** The Azure endpoint as AZURE_BLOB_ENDPOINT takes it: the account as `{accountName}`. */
  azureEndpointTemplate: string;
  s3: S3Client;
  blobs: BlobServiceClient;
  gcs: Storage;
}

/**
 * The emulators from the test services' environment, with a client of each to make buckets and
 * read what a job wrote. Call it in `before()`: a missing variable then fails that suite (never
 * a skip), not the whole run.
 */
export function storageEmulators(): StorageEmulators {
  const [s3Endpoint, azureEndpoint, azureAccount, azureKey, gcsEndpoint] = [
    'TEST_S3_ENDPOINT',
    'TEST_AZURE_BLOB_ENDPOINT',
    'TEST_AZURE_ACCOUNT',
    'TEST_AZURE_KEY',
    'TEST_GCS_ENDPOINT',
  ].map(requireEnv) as [string, string, string, string, string];
  return {
    s3Endpoint,
    azureEndpoint,
    azureAccount,
    azureKey,
    gcsEndpoint,
    azureEndpointTemplate: azureEndpoint.replace(azureAccount, '{accountName}'),
    s3: new S3Client({
      endpoint: s3Endpoint,
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    }),
    blobs: new BlobServiceClient(
      azureEndpoint,
      new StorageSharedKeyCredential(azureAccount, azureKey),
    ),
    gcs: new Storage({ apiEndpoint: gcsEndpoint, projectId: 'test-project' }),
  };
}
