import { expect } from 'chai';
import { existsSync, globSync, readFileSync } from 'node:fs';
import { dirname, join, matchesGlob, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// The rule of test/ (docs/tests.md, test/README.md): which file goes where, and which script
// runs it. Checked here so that a file added in the wrong place fails `npm test`.
const root = fileURLToPath(new URL('..', import.meta.url));
const scripts = (
  JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  }
).scripts;

/** The quoted globs of a mocha command line: the files it names and those it `--ignore`s. */
function mochaGlobs(script: string | undefined): { include: string[]; ignore: string[] } {
  expect(script, 'the script exists').to.be.a('string');
  const include: string[] = [];
  const ignore: string[] = [];
  for (const m of (script ?? '').matchAll(/(--ignore\s+)?'([^']+)'/g))
    (m[1] ? ignore : include).push(m[2] ?? '');
  return { include, ignore };
}

/** The test files a mocha script runs, as mocha picks them (relative to the repository). */
function filesOf(script: string | undefined): Set<string> {
  const { include, ignore } = mochaGlobs(script);
  const files = include.flatMap((g) => globSync(g, { cwd: root }));
  return new Set(files.filter((f) => !ignore.some((g) => matchesGlob(f, g))));
}

const allTests = globSync('test/**/*.test.ts', { cwd: root }).sort();
const unit = filesOf(scripts['test:unit']);
const integration = filesOf(scripts['test:integration']);
const needsServices = (f: string): boolean => /^test\/(integration|e2e)\//.test(f);
const self = relative(root, fileURLToPath(import.meta.url));

/** A test file and every file under test/ it imports, transitively (not services/ or packages). */
function withTestImports(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const text = readFileSync(join(root, file), 'utf8');
  for (const m of text.matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
    const target = relative(root, join(root, dirname(file), m[1] ?? ''));
    if (target.startsWith('test/') && existsSync(join(root, target))) withTestImports(target, seen);
  }
  return seen;
}

// What only the test services provide (scripts/test-services/start-all.sh): the broker, the
// schema registry, the storage emulators and the browser.
const SERVICE_MARKERS =
  /TEST_(KAFKA_BROKERS|KAFKA_CTL|SCHEMA_REGISTRY_URL|S3_ENDPOINT|AZURE_BLOB_ENDPOINT|GCS_ENDPOINT|CHROMIUM)|puppeteer/;

describe('test/ layout and the test scripts', () => {
  it('test:unit and test:integration split the test files exactly: each runs in one of them', () => {
    expect(allTests.length).to.be.greaterThan(100);
    expect(
      allTests.filter((f) => unit.has(f) && integration.has(f)),
      'in both',
    ).to.deep.equal([]);
    expect(
      allTests.filter((f) => !unit.has(f) && !integration.has(f)),
      'in none',
    ).to.deep.equal([]);
    expect([...unit, ...integration].sort()).to.deep.equal(allTests);
  });

  it('the split follows the folders: test/integration/ and test/e2e/ are the integration set', () => {
    expect(allTests.filter((f) => needsServices(f) !== integration.has(f))).to.deep.equal([]);
  });

  it('npm test (scripts/test-all.sh) runs every test file, once', () => {
    const script = readFileSync(join(root, 'scripts/test-all.sh'), 'utf8');
    expect(script).to.contain(`mocha.js" 'test/**/*.test.ts'`);
    expect(scripts['test']).to.equal('bash scripts/test-all.sh');
  });

  it('a unit test sits where it mirrors services/, or at the top of test/ when it tests the repository', () => {
    const misplaced = allTests
      .filter((f) => !needsServices(f))
      .filter((f) => {
        const folder = dirname(f).replace(/^test\/?/, '');
        return folder !== '' && !existsSync(join(root, 'services', folder));
      });
    expect(misplaced, 'unit tests in a folder services/ does not have').to.deep.equal([]);
  });

  it('no unit test (nor the support code it imports) reaches for a test service', () => {
    const reaching = allTests
      .filter((f) => !needsServices(f) && f !== self) // this file names the markers
      .flatMap((f) =>
        [...withTestImports(f)]
          .filter((g) => SERVICE_MARKERS.test(readFileSync(join(root, g), 'utf8')))
          .map((g) => (g === f ? f : `${f} (through ${g})`)),
      );
    expect(reaching, 'move these to test/integration/ or test/e2e/').to.deep.equal([]);
  });

  it('support code is not a test: nothing under test/support/ is named *.test.ts', () => {
    expect(allTests.filter((f) => f.startsWith('test/support/'))).to.deep.equal([]);
  });
});
