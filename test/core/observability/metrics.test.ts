import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { Registry } from 'prom-client';
import { errorCatalog } from '../../../services/core/errors.ts';
import {
  CALLBACK_OUTCOMES,
  DEAD_LETTER_REASONS,
  JOB_FORMATS,
  JOB_KINDS,
  STORE_KINDS,
  createMetrics,
} from '../../../services/core/observability/metrics.ts';

describe('metrics', () => {
  it('a scrape right after start lists every known failure, retry, callback and dead-letter series at 0', async () => {
    const text = await createMetrics(new Registry(), { defaultMetrics: false }).registry.metrics();
    const series = (name: string, labels: string): string => `media_${name}{${labels}} 0`;
    const expected: string[] = [];
    for (const kind of JOB_KINDS) {
      expected.push(series('jobs_finished_total', `kind="${kind}",outcome="succeeded",code=""`));
      expected.push(
        series('jobs_finished_total', `kind="${kind}",outcome="canceled",code="canceled"`),
      );
      for (const [code, { retryable }] of Object.entries(errorCatalog)) {
        if (code !== 'canceled')
          expected.push(
            series('jobs_finished_total', `kind="${kind}",outcome="failed",code="${code}"`),
          );
        if (retryable) expected.push(series('jobs_retried_total', `kind="${kind}",code="${code}"`));
      }
      for (const format of JOB_FORMATS[kind])
        for (const outcome of ['succeeded', 'failed', 'retried', 'canceled'])
          expected.push(
            series(
              'job_attempt_duration_seconds_count',
              `kind="${kind}",format="${format}",outcome="${outcome}"`,
            ),
          );
      expected.push(series('ffmpeg_speed_ratio_count', `kind="${kind}",pass="encode"`));
      expected.push(series('jobs_moved_total', `kind="${kind}"`));
    }
    for (const reason of DEAD_LETTER_REASONS)
      expected.push(series('events_dead_lettered_total', `reason="${reason}"`));
    for (const outcome of CALLBACK_OUTCOMES)
      expected.push(series('callbacks_total', `outcome="${outcome}"`));
    for (const direction of ['in', 'out'])
      for (const store of STORE_KINDS)
        expected.push(series('transfer_bytes_total', `direction="${direction}",store="${store}"`));
    expected.push(series('ffmpeg_speed_ratio_count', `kind="summary",pass="analyse"`));
    const lines = new Set(text.split('\n'));
    expect(expected.filter((line) => !lines.has(line))).to.deep.equal([]);
    // A cancel is never a failure, even at 0.
    expect(text).not.to.include('outcome="failed",code="canceled"');
  });

  it('names read as an operator reads them: one prefix, units, and the build it is', async () => {
    const text = await createMetrics(new Registry(), { defaultMetrics: false }).registry.metrics();
    const names = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] ?? '');
    expect(
      names.filter((n) => !n.startsWith('media_') || n.startsWith('media_media_')),
    ).to.deep.equal([]);
    expect(names).to.include.members([
      'media_processed_seconds_total',
      'media_job_attempts_total',
      'media_job_attempt_duration_seconds',
      'media_build_info',
    ]);
    const { version } = JSON.parse(
      await readFile(new URL('../../../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    expect(text).to.include(
      `media_build_info{version="${version}",node_version="${process.version}"} 1`,
    );
  });
});
