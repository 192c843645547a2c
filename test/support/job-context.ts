import type { JobRequested } from '../../services/core/contracts/types.generated.ts';
import type { JobContext } from '../../services/core/worker/job-handler.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';

/** A job context for calling a media handler directly: never canceled, silent, no secrets. */
export function testJobContext(kind: JobRequested['kind']): JobContext {
  return {
    signal: new AbortController().signal,
    attempt: 1,
    kind,
    orgId: 'o',
    span: (_name, work) => work(),
    log: silentLogger,
    progress: () => undefined,
    openSecret: () => undefined,
    waiting: () => undefined,
    begin: () => Promise.resolve(),
  };
}
