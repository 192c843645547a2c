import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { spawnService } from '../../support/spawn-service.ts';

const fixture = fileURLToPath(
  new URL('../../support/fixtures/failing-service.ts', import.meta.url),
);

describe('runtime: an error nobody handled', () => {
  for (const [mode, msg, text] of [
    ['throw', 'process.uncaught_exception', 'boom from a timer'],
    ['reject', 'process.unhandled_rejection', 'boom from a promise'],
  ] as const) {
    it(`is logged with its stack and cause, and ends the process with code 1 (${mode})`, async function () {
      this.timeout(15_000);
      const service = spawnService(fixture, { FAIL: mode, LOG_LEVEL: 'info' });
      const code = await new Promise<number | null>((resolve) =>
        service.child.once('close', resolve),
      );
      expect(code).to.equal(1);
      const record = service.logs.find((r) => r['msg'] === msg) as
        | { level: string; error: { message: string; stack: string; cause: { message: string } } }
        | undefined;
      expect(record, JSON.stringify(service.logs)).to.not.equal(undefined);
      expect(record?.level).to.equal('error');
      expect(record?.error.message).to.equal(text);
      expect(record?.error.stack).to.contain('failing-service.ts');
      expect(record?.error.cause.message).to.equal('the socket went away');
    });
  }
});
