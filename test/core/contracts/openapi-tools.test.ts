import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';

const run = promisify(execFile);
const root = new URL('../../../', import.meta.url).pathname;
const documentPath = join(root, 'schemas/openapi.json');
const bin = (path: string): string => join(root, 'node_modules', path);

/** A client written against the generated types: one right request, and wrong ones tsc must refuse. */
const CLIENT = `
import type { components, operations } from './api.ts';

type Transcode = components['schemas']['TranscodeRequest'];
type Summary = components['schemas']['SummaryRequest'];

export const transcode: Transcode = {
  apiKey: 'key',
  inputUrl: 's3://in-bucket/clip.mov',
  inputCreds: { region: 'eu-west-1', accessKeyId: 'id', secretAccessKey: 'secret' },
  outputUrl: 'https://files.example.com/out.mp4',
  encoder: 'h264',
  container: 'mp4',
  bitrateKbps: '2000',
  width: 1280,
  watermark: { text: 'hello', fontSize: 24 },
};
export const summary: Summary = {
  apiKey: 'key',
  inputUrl: 'https://files.example.com/in.mp4',
  outputUrl: 'https://files.example.com/out.gif',
  removeAudio: true,
  watermark: { imageName: 'logo', width: 160, height: 90, position: 'topLeft' },
};
export const submit: operations['submitTranscode']['requestBody'] = {
  content: { 'application/json': transcode },
};
export const acknowledged = (ack: components['schemas']['JobAck']): string => ack.id;

// @ts-expect-error an encoder the contract does not have
export const badEncoder: Transcode = { ...transcode, encoder: 'mpeg2' };
// @ts-expect-error the bitrate is a string
export const numericBitrate: Transcode = { ...transcode, bitrateKbps: 2000 };
// @ts-expect-error inputUrl is required
export const noInput: Transcode = { apiKey: 'key', outputUrl: 'https://x.example/o.mp4', encoder: 'h264', container: 'mp4', bitrateKbps: '1000' };
// @ts-expect-error a summary has no encoder
export const summaryEncoder: Summary = { ...summary, encoder: 'h264' };
// @ts-expect-error a text watermark needs its fontSize
export const noFontSize: Summary = { ...summary, watermark: { text: 'hi' } };
`;

describe('OpenAPI description in stock tools', function () {
  this.timeout(120_000);

  describesLeavesOutValidatorOnlyKeywords();

  describesGivesOpenapiTypescriptTypes();
});

function describesLeavesOutValidatorOnlyKeywords(): void {
  it('leaves out what only our validator reads (ajv-errors errorMessage, $defs inside schemas)', async () => {
    const text = await readFile(documentPath, 'utf8');
    expect(text).not.to.include('"errorMessage"');
    expect(text).not.to.include('"$defs"');
  });

  it('passes `redocly lint` with no errors (recommended rules, examples checked)', async () => {
    const { stdout } = await run(
      process.execPath,
      [bin('@redocly/cli/bin/cli.js'), 'lint', documentPath, '--format=json'],
      {
        cwd: root,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        maxBuffer: 16 * 1024 * 1024,
      },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const report = JSON.parse(stdout) as {
      totals: { errors: number };
      problems: { severity: string; ruleId: string; message: string }[];
    };
    const errors = report.problems.filter((p) => p.severity === 'error');
    expect(errors.map((p) => `${p.ruleId}: ${p.message}`)).to.deep.equal([]);
    expect(report.totals.errors).to.equal(0);
  });

  it('names every operation, has a server, and says where the key goes', async () => {
    const document = JSON.parse(await readFile(documentPath, 'utf8')) as {
      servers?: unknown[];
      paths: Record<string, Record<string, { operationId?: string; security?: unknown[] }>>;
      components: { securitySchemes: Record<string, { in?: string; name?: string }> };
    };
    expect(document.servers).to.have.length.greaterThan(0);
    const ids = Object.values(document.paths).flatMap((ops) =>
      Object.values(ops).map((op) => op.operationId),
    );
    expect(ids.every((id) => typeof id === 'string')).to.equal(true);
    expect(new Set(ids).size).to.equal(ids.length);
    for (const path of ['/transcode', '/summary/gif', '/summary/mp4'])
      expect(document.paths[path]?.['post']?.security, path).to.deep.equal([]);
    expect(document.paths['/jobs/{id}']?.['get']?.security).to.deep.equal([
      { ApiKeyHeader: [] },
      { BearerKey: [] },
    ]);
    expect(document.components.securitySchemes['ApiKeyHeader']).to.deep.include({
      in: 'header',
      name: 'X-Api-Key',
    });
  });
}

function describesGivesOpenapiTypescriptTypes(): void {
  it('gives openapi-typescript types that compile under tsc --strict and refuse a wrong request', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'openapi-types-'));
    try {
      const ast = await openapiTS(new URL(`file://${documentPath}`));
      await writeFile(join(dir, 'api.ts'), astToString(ast));
      await writeFile(join(dir, 'client.ts'), CLIENT);
      const tsc = await run(
        process.execPath,
        [
          bin('typescript/bin/tsc'),
          '--strict',
          '--noEmit',
          '--exactOptionalPropertyTypes',
          '--noUncheckedIndexedAccess',
          '--target',
          'es2022',
          '--module',
          'nodenext',
          '--allowImportingTsExtensions',
          '--types',
          'node',
          '--typeRoots',
          bin('@types'),
          join(dir, 'api.ts'),
          join(dir, 'client.ts'),
        ],
        { cwd: dir },
      ).then(
        () => '',
        (error: Error & { stdout?: string }) => error.stdout || error.message,
      );
      expect(tsc).to.equal('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
}
