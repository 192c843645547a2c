// Mocha's spec output, then the closing lines that CI reads: each skipped test's title, then
// "N skipped", then the last line, "N passed, N failed".
// Written synchronously on run end: Spec registered its epilogue first, so these lines follow
// it, and `exit: true` in .mocharc.json cannot cut them off.
'use strict';
const Mocha = require('mocha');
const { EVENT_RUN_END, EVENT_TEST_PENDING } = Mocha.Runner.constants;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const skipped = [];
    runner.on(EVENT_TEST_PENDING, (test) => skipped.push(test.fullTitle()));
    runner.once(EVENT_RUN_END, () => {
      const { passes = 0, failures = 0 } = runner.stats || {};
      const titles = skipped.map((title) => `skipped: ${title}\n`).join('');
      require('node:fs').writeSync(
        1,
        `\n${titles}${skipped.length} skipped\n${passes} passed, ${failures} failed\n`,
      );
    });
  }
}

module.exports = SummaryReporter;
