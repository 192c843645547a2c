import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { MediaError } from '../../../services/core/errors.ts';
import {
  bodyToFile,
  failureToMediaError,
  mapTransferErrors,
} from '../../../services/core/storage/bucket-transfer.ts';

const never = new AbortController().signal;

let dir: string;

describe('bucket transfers', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bucket-transfer-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  describesWritesBodyFileReports();

  describesMapsStatusesTaxonomySide();

  describesReportsAbortedTransferSignal();
});

function describesWritesBodyFileReports(): void {
  it('writes a body to a file and reports the final byte count', async () => {
    const seen: number[] = [];
    const dest = join(dir, 'ok.bin');
    const bytes = await bodyToFile(Readable.from([Buffer.alloc(10, 1), Buffer.alloc(5, 2)]), dest, {
      signal: never,
      maxBytes: 15,
      declared: 15,
      onProgress: (n) => seen.push(n),
    });
    expect(bytes).to.equal(15);
    expect(seen.at(-1)).to.equal(15);
    expect((await readFile(dest)).length).to.equal(15);
  });

  it('counts bytes against maxBytes even when no size was declared, and removes the partial file', async () => {
    const dest = join(dir, 'big.bin');
    const body = Readable.from([Buffer.alloc(10), Buffer.alloc(10), Buffer.alloc(10)]);
    const error = await bodyToFile(body, dest, {
      signal: never,
      maxBytes: 15,
      declared: undefined,
      onProgress: undefined,
    }).catch((e: unknown) => e);
    expect((error as MediaError).code).to.equal('input_too_large');
    expect(existsSync(dest)).to.equal(false);
  });

  it('treats a body shorter than declared as a retryable failure, leaving no file', async () => {
    const dest = join(dir, 'short.bin');
    const error = await bodyToFile(Readable.from([Buffer.alloc(10)]), dest, {
      signal: never,
      maxBytes: 100,
      declared: 20,
      onProgress: undefined,
    }).catch((e: unknown) => e);
    expect([(error as MediaError).code, (error as MediaError).retryable]).to.deep.equal([
      'input_unreachable',
      true,
    ]);
    expect(existsSync(dest)).to.equal(false);
  });
}

function describesMapsStatusesTaxonomySide(): void {
  it('maps statuses to the taxonomy by side', () => {
    const code = (side: 'input' | 'output', status?: number): string =>
      failureToMediaError('S3', side, status === undefined ? {} : { status }).code;
    expect(
      [404, 403, 401, 400, 301, 429, 500, 503, 412, undefined].map((s) => code('input', s)),
    ).to.deep.equal([
      'input_not_found',
      'input_rejected',
      'input_rejected',
      'input_rejected',
      'input_rejected',
      'input_unreachable',
      'input_unreachable',
      'input_unreachable',
      'input_unreachable',
      'input_unreachable',
    ]);
    expect([404, 403, 409, 503, undefined].map((s) => code('output', s))).to.deep.equal([
      'output_rejected',
      'output_rejected',
      'output_rejected',
      'output_unreachable',
      'output_unreachable',
    ]);
    expect(failureToMediaError('GCS', 'input', { badCredentials: true }).code).to.equal(
      'input_rejected',
    );
  });

  it('writes messages from status and code only, never from the SDK error', async () => {
    const sdkError = Object.assign(new Error('SignatureDoesNotMatch: AKIAEXAMPLEKEY sig=abc123'), {
      code: 'ECONNRESET',
    });
    const error = await mapTransferErrors(
      'S3',
      'input',
      never,
      () => ({ status: 403, serviceCode: 'SignatureDoesNotMatch' }),
      () => Promise.reject(sdkError),
    ).catch((e: unknown) => e);
    expect((error as MediaError).message).to.equal(
      'S3 refused the credentials or access (403 SignatureDoesNotMatch)',
    );
    const odd = failureToMediaError('S3', 'input', {
      status: 403,
      serviceCode: 'AKIA EXAMPLE <xml>',
    });
    expect(odd.message).not.to.include('AKIA');
  });
}

function describesReportsAbortedTransferSignal(): void {
  it("reports an aborted transfer with the signal's own MediaError", async () => {
    const controller = new AbortController();
    controller.abort(new MediaError('job_timeout', 'too slow'));
    const error = await mapTransferErrors(
      'S3',
      'output',
      controller.signal,
      () => ({}),
      () => Promise.resolve(1),
    ).catch((e: unknown) => e);
    expect((error as MediaError).code).to.equal('job_timeout');
  });
}
