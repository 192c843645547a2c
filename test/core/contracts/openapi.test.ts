import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import request from 'supertest';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';
import { makeIngress } from '../../ingress/ingress-fixture.ts';

interface Operation {
  requestBody?: {
    content: Record<
      string,
      { schema: { $ref: string }; examples?: Record<string, { value: unknown }> }
    >;
  };
}

describe('OpenAPI description (schemas/openapi.json)', () => {
  const contracts = loadContracts();
  const document = JSON.parse(contracts.openApi) as {
    paths: Record<string, Record<string, Operation>>;
  };

  it('is generated from the schemas and not stale', async function () {
    this.timeout(30_000);
    await promisify(execFile)(process.execPath, ['scripts/generate-openapi.ts', '--check']);
  });

  it('is a valid OpenAPI 3.1 document whose references all resolve', async () => {
    const validator = new Validator();
    const result = await validator.validate(
      JSON.parse(contracts.openApi) as Record<string, unknown>,
    );
    expect(result.errors, JSON.stringify(result.errors)).to.equal(undefined);
    expect(result.valid).to.equal(true);
    expect(validator.version).to.equal('3.1');
    expect(() => validator.resolveRefs()).not.to.throw();
  });

  it('every documented path and method is served by the ingress (not a 404 or 405)', async () => {
    const { server } = await makeIngress();
    const id = '6f1c1f0e-8a51-4d4e-9d53-5b7a4d1f8a10';
    for (const [path, operations] of Object.entries(document.paths))
      for (const method of Object.keys(operations)) {
        const url = path.replace('{id}', id).replace('{name}', 'logo.png');
        const agent = request(server);
        const res =
          method === 'post' || method === 'put'
            ? await agent[method](url).send({})
            : method === 'delete'
              ? await agent.delete(url)
              : await agent.get(url);
        expect(
          res.status === 405 ||
            (res.status === 404 && /no such path/.test(String(res.body?.error))),
          `${method} ${path}: ${res.status}`,
        ).to.equal(false);
      }
    expect(Object.keys(document.paths)).to.include.members([
      '/transcode',
      '/summary/gif',
      '/summary/mp4',
      '/jobs/{id}',
      '/jobs/{id}/callbacks/redeliver',
      '/watermarks',
      '/watermarks/{name}',
    ]);
  });

  it('every request example passes the request validator of its path', () => {
    const validators: Record<string, (body: unknown) => { ok: boolean }> = {
      '/transcode': contracts.transcodeRequest,
      '/summary/gif': contracts.summaryRequest,
      '/summary/mp4': contracts.summaryRequest,
      '/streams': contracts.streamRequest,
    };
    let checked = 0;
    for (const [path, operations] of Object.entries(document.paths))
      for (const operation of Object.values(operations))
        for (const media of Object.values(operation.requestBody?.content ?? {}))
          for (const [name, example] of Object.entries(media.examples ?? {})) {
            const validate = validators[path];
            expect(validate, `a validator for ${path}`).to.not.equal(undefined);
            expect(validate?.(example.value).ok, `${path} ${name}`).to.equal(true);
            checked++;
          }
    expect(checked).to.be.greaterThanOrEqual(6);
  });

  it('is served at GET /openapi.json', async () => {
    const { server } = await makeIngress();
    const res = await request(server).get('/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.match(/^application\/json/);
    expect(res.body).to.deep.equal(document);
  });
});
