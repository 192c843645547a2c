// Mocha's spec output, then one plain closing line that CI reads: "N passed, N failed".
// Written synchronously on run end: Spec registered its epilogue first, so this line follows
// it, and `exit: true` in .mocharc.json cannot cut it off.
'use strict';
const Mocha = require('mocha');
const { EVENT_RUN_END } = Mocha.Runner.constants;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const { passes = 0, failures = 0 } = runner.stats || {};
      require('node:fs').writeSync(1, `\n${passes} passed, ${failures} failed\n`);
    });
  }
}

module.exports = SummaryReporter;
