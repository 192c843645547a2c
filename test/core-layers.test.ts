import { expect } from 'chai';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const root = new URL('..', import.meta.url).pathname;

// The project's own eslint.config.js, type-checking off so that a file that exists only here
// can be linted (the layer rules read import paths, not types).
const eslint = new ESLint({
  cwd: root,
  overrideConfig: [
    { files: ['**/*.ts'], ...tseslint.configs.disableTypeChecked },
    { files: ['**/*.ts'], rules: { 'import-x/no-cycle': 'off' } },
  ],
});

async function layerErrors(file: string, from: string): Promise<string[]> {
  const code = `import type { X } from '${from}';\nexport type Y = X;\n`;
  const [result] = await eslint.lintText(code, { filePath: `${root}services/core/${file}` });
  const fatal = result?.messages.find((m) => m.fatal);
  if (!result || fatal) throw new Error(`not linted: ${fatal?.message}`);
  return result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('eslint: the layers inside services/core', function () {
  this.timeout(20_000);

  it('refuses an import that runs up the layers, naming the layer order', async () => {
    const [media] = await layerErrors('media/layer-probe.ts', '../worker/run-job-worker.ts');
    expect(media).to.include('core/callbacks, storage and media imports no layer above it');
    expect(media).to.include('core/worker/');
    expect(media).to.include('base < bus < events');
    expect(await layerErrors('config-probe.ts', './bus/event-bus.ts')).to.have.length(1);
    expect(await layerErrors('status/layer-probe.ts', '../worker/dead-letter.ts')).to.have.length(
      1,
    );
    // An SDK module keeps its layer's rule.
    expect(
      await layerErrors('storage/probe-store.ts', '../runtime/create-runtime.ts'),
    ).to.have.length(1);
  });

  it('allows imports from the same layer and the ones below', async () => {
    expect(await layerErrors('worker/layer-probe.ts', '../status/job-cancels.ts')).to.deep.equal(
      [],
    );
    expect(await layerErrors('media/layer-probe.ts', '../storage/media-store.ts')).to.deep.equal(
      [],
    );
    expect(await layerErrors('runtime/layer-probe.ts', '../media-job/media-job.ts')).to.deep.equal(
      [],
    );
  });

  it('lets the watermark bucket alone import the AWS SDK, keeping its layer', async () => {
    const sdk = '@aws-sdk/client-s3';
    expect(await layerErrors('watermarks/watermark-store.ts', sdk)).to.deep.equal([]);
    expect(await layerErrors('watermarks/prepare-watermark.ts', sdk)).to.have.length(1);
    expect(
      await layerErrors('watermarks/watermark-store.ts', '../status/job-cancels.ts'),
    ).to.have.length(1);
  });
});
