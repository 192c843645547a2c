/**
 * Whether the process is stopping. Set first thing on SIGTERM/SIGINT, before anything closes, so
 * `/readyz` answers 503 at once and a load balancer or orchestrator stops sending work while
 * running jobs still finish (issue 22: a drain must be visible from outside).
 */
export interface DrainState {
  readonly draining: boolean;
  /** Epoch ms of the stop, once it began. */
  readonly since: number | undefined;
  begin(): void;
}

export function createDrainState(now: () => number = Date.now): DrainState {
  let since: number | undefined;
  return {
    get draining() {
      return since !== undefined;
    },
    get since() {
      return since;
    },
    begin() {
      since ??= now();
    },
  };
}
