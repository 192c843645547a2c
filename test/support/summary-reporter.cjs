// Mocha's spec output, then one plain closing line that CI reads: "N passed, N failed".
'use strict';
const Mocha = require('mocha');
const { EVENT_RUN_END } = Mocha.Runner.constants;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const { passes = 0, failures = 0 } = runner.stats || {};
      // After Spec's own epilogue, which it prints on the same event.
      setImmediate(() => process.stdout.write(`\n${passes} passed, ${failures} failed\n`));
    });
  }
}

module.exports = SummaryReporter;
