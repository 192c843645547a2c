import { expect } from 'chai';
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
      for (const [code, { retryable }] of Object.entries(errorCatalog)) {
        expected.push(
          series('jobs_finished_total', `kind="${kind}",outcome="failed",code="${code}"`),
        );
        if (retryable) expected.push(series('jobs_retried_total', `kind="${kind}",code="${code}"`));
      }
      for (const format of JOB_FORMATS[kind])
        expected.push(
          series(
            'job_duration_seconds_count',
            `kind="${kind}",format="${format}",outcome="failed"`,
          ),
        );
      expected.push(series('ffmpeg_speed_ratio_count', `kind="${kind}",pass="encode"`));
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
  });
});
