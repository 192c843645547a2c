/*
 * Fair shares of a worker's slots between organisations (DESIGN §3, "Scheduling is fair and
 * never head-of-line"). One module, used by both buses' subscriptions.
 *
 * A free slot goes to the tenant (organisation) with work ready whose share of the running slots
 * is the smallest (running ÷ weight), so that another organisation's job takes the first slot
 * that frees whatever the backlog. Among tenants with equal shares, a virtual-time round robin
 * (start-time fair queueing, the per-job form of deficit round robin with unit cost) decides:
 * each start advances the tenant's pass by 1 ÷ weight, and a tenant that was idle comes back at
 * the current virtual time, so idling banks no credit. Ties left after that go to the oldest
 * record. An optional cap bounds what one tenant runs at once on this worker.
 *
 * An item may cost more than 1 (a stream ladder's encode: see the streamer): it then counts as
 * that many running items of its tenant and advances the tenant's pass by cost ÷ weight.
 */

export interface FairShareOptions {
  /** Weight per tenant (default 1 for every tenant): a tenant of weight 2 gets twice the slots. */
  weights?: ReadonlyMap<string, number>;
  /** Jobs one tenant may run at once on this worker (0 or undefined: no cap). */
  maxRunningPerTenant?: number;
}

export interface FairShare {
  /**
   * Picks up to `free` items to start now, fairly across tenants; `ready` lists the items that
   * may start (not blocked by an earlier record of their key), oldest first. Every picked item
   * counts as running for its tenant until `finished` is called for it.
   */
  pick<T>(
    ready: readonly T[],
    free: number,
    tenantOf: (item: T) => string,
    costOf?: (item: T) => number,
  ): T[];
  /** An item picked earlier has finished (whatever its outcome); `cost` as it was picked with. */
  finished(tenant: string, cost?: number): void;
  /** Running items per tenant (for metrics and tests). */
  running(): ReadonlyMap<string, number>;
}

interface TenantState {
  running: number;
  pass: number;
}

export function createFairShare(options: FairShareOptions = {}): FairShare {
  const tenants = new Map<string, TenantState>();
  const cap = options.maxRunningPerTenant ?? 0;
  const weightOf = (t: string): number => options.weights?.get(t) ?? 1;
  let virtualTime = 0;

  const stateOf = (tenant: string): TenantState => {
    let s = tenants.get(tenant);
    if (!s) {
      s = { running: 0, pass: virtualTime };
      tenants.set(tenant, s);
    }
    // Back from idle: no credit for the time away.
    if (s.running === 0 && s.pass < virtualTime) s.pass = virtualTime;
    return s;
  };

  return {
    pick<T>(
      ready: readonly T[],
      free: number,
      tenantOf: (item: T) => string,
      costOf: (item: T) => number = () => 1,
    ): T[] {
      const queues = new Map<string, T[]>();
      for (const item of ready) {
        const t = tenantOf(item);
        const q = queues.get(t);
        if (q) q.push(item);
        else queues.set(t, [item]);
      }
      const order = new Map(ready.map((item, i) => [item, i]));
      const picked: T[] = [];
      while (picked.length < free) {
        let best: { tenant: string; state: TenantState; head: T } | undefined;
        for (const [tenant, q] of queues) {
          const head = q[0];
          const state = stateOf(tenant);
          if (head === undefined || (cap > 0 && state.running >= cap)) continue;
          if (!best || before(tenant, state, head, best)) best = { tenant, state, head };
        }
        if (!best) break;
        queues.get(best.tenant)?.shift();
        virtualTime = Math.max(virtualTime, best.state.pass);
        const cost = costOf(best.head);
        best.state.pass += cost / weightOf(best.tenant);
        best.state.running += cost;
        picked.push(best.head);
      }
      return picked;

      function before(
        tenant: string,
        state: TenantState,
        head: T,
        other: { tenant: string; state: TenantState; head: T },
      ): boolean {
        const share = state.running / weightOf(tenant);
        const otherShare = other.state.running / weightOf(other.tenant);
        if (share !== otherShare) return share < otherShare;
        if (state.pass !== other.state.pass) return state.pass < other.state.pass;
        return (order.get(head) ?? 0) < (order.get(other.head) ?? 0);
      }
    },

    finished(tenant, cost = 1) {
      const s = tenants.get(tenant);
      if (!s) return;
      // Fractional costs may leave a rounding residue; below a millionth is nothing running.
      s.running = s.running - cost < 1e-6 ? 0 : s.running - cost;
      // Idle and without credit: forget it, so the map holds only tenants with work.
      if (s.running === 0 && s.pass <= virtualTime) tenants.delete(tenant);
    },

    running() {
      return new Map([...tenants].filter(([, s]) => s.running > 0).map(([t, s]) => [t, s.running]));
    },
  };
}

/** The tenant of records that name none (and of subscriptions without `tenantOf`). */
export const NO_TENANT = '';
