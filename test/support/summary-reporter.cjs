// Mocha's spec output with the wall time of slow hooks, then the closing lines that CI reads:
// the slowest files' wall times (where a run's time goes), each skipped test's title, then
// "N skipped", then the last line, "N passed, N failed".
// Written synchronously on run end: Spec registered its epilogue first, so these lines follow
// it, and `exit: true` in .mocharc.json cannot cut them off.
'use strict';
const Mocha = require('mocha');
const { writeSync } = require('node:fs');
const {
  EVENT_RUN_END,
  EVENT_TEST_PENDING,
  EVENT_HOOK_BEGIN,
  EVENT_HOOK_END,
  EVENT_SUITE_BEGIN,
  EVENT_SUITE_END,
} = Mocha.Runner.constants;

/** A hook that takes longer is shown with its time, as spec shows a slow test's. */
const SLOW_HOOK_MS = 5000;
const SLOWEST_FILES = 15;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const skipped = [];
    const hookStarts = new Map();
    const fileStarts = new Map();
    const fileTimes = new Map();
    runner.on(EVENT_TEST_PENDING, (test) => skipped.push(test.fullTitle()));
    runner.on(EVENT_HOOK_BEGIN, (hook) => hookStarts.set(hook, Date.now()));
    runner.on(EVENT_HOOK_END, (hook) => {
      const ms = Date.now() - (hookStarts.get(hook) ?? Date.now());
      hookStarts.delete(hook);
      if (ms >= SLOW_HOOK_MS) Mocha.reporters.Base.consoleLog(`      (${hook.title}: ${ms}ms)`);
    });
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && !fileStarts.has(suite.file)) fileStarts.set(suite.file, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const start = suite.file && fileStarts.get(suite.file);
      if (start) fileTimes.set(suite.file, Date.now() - start);
    });
    runner.once(EVENT_RUN_END, () => {
      const { passes = 0, failures = 0 } = runner.stats || {};
      const cwd = process.cwd() + '/';
      const slowest = [...fileTimes.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, SLOWEST_FILES)
        .map(
          ([file, ms]) => `  ${(ms / 1000).toFixed(0).padStart(5)} s  ${file.replace(cwd, '')}\n`,
        )
        .join('');
      const titles = skipped.map((title) => `skipped: ${title}\n`).join('');
      writeSync(
        1,
        `\nslowest files (wall time):\n${slowest}\n${titles}${skipped.length} skipped\n` +
          `${passes} passed, ${failures} failed\n`,
      );
    });
  }
}

module.exports = SummaryReporter;
