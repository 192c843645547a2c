/**
 * Attempts in flight per destination host, bounded, so one slow or silent receiver holds at most
 * `perHost` of the notifier's slots and every other destination keeps flowing.
 */
export interface HostSlots {
  /** A release function when `host` has a free slot; undefined when it is at its bound. */
  tryAcquire(host: string): (() => void) | undefined;
}

export function createHostSlots(perHost: number): HostSlots {
  const inFlight = new Map<string, number>();
  return {
    tryAcquire(host) {
      const used = inFlight.get(host) ?? 0;
      if (used >= perHost) return undefined;
      inFlight.set(host, used + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (inFlight.get(host) ?? 1) - 1;
        if (left <= 0) inFlight.delete(host);
        else inFlight.set(host, left);
      };
    },
  };
}
