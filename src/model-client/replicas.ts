/**
 * The model-server replicas one gateway (or MCP endpoint) knows, and which one takes the next request.
 *
 * - Membership comes from discovery sources (the static URL list, DNS); a replica that leaves finishes
 *   what it has in flight and is then closed; one that joins takes traffic at once.
 * - Balancing: least outstanding requests, ties broken round-robin, so an idle set is not drained
 *   onto its first member.
 * - Passive health: consecutive failures (connection refused or reset, timeouts, garbage answers,
 *   5xx) eject a replica after `ejectAfter`; a replica that says it is not ready is ejected at once.
 *   An ejected replica is probed (its readiness) with a doubling delay and readmitted when ready.
 *   A readmitted replica is on probation until its first good answer: one failure ejects it again,
 *   and each ejection in a row starts probing later, so a replica whose readiness is fine but whose
 *   answers are garbage costs one failed request per (growing, capped) interval, not three.
 *   When no replica is up, the least loaded ejected one is tried rather than failing outright
 *   (they may all have recovered between probes).
 */
import type { Logger } from '../logging/logger.js';

export interface HealthOptions {
  /** Consecutive failures that eject a replica. */
  ejectAfter: number;
  /** Delay before the first probe of an ejected replica; doubled after each failed probe. */
  probeMs: number;
  /** Cap on the probe delay. */
  probeMaxMs: number;
}

export const DEFAULT_HEALTH: HealthOptions = { ejectAfter: 3, probeMs: 250, probeMaxMs: 10_000 };

export type ReplicaState = 'up' | 'down';

export interface Replica<C> {
  readonly origin: string;
  /** The connection pool (or whatever the caller uses to reach it). */
  readonly conn: C;
  outstanding: number;
  state: ReplicaState;
  /** Consecutive failures since the last success. */
  failures: number;
  /** Why it is down. */
  reason: string;
  /** Requests sent to it, for metrics and tests. */
  requests: number;
  /** Left the membership: takes no new request, closed once idle. */
  removed: boolean;
  /** Readmitted and not yet proven by a good answer. */
  probation: boolean;
  /** Ejections since the last good answer. */
  ejections: number;
}

export interface ReplicaSetOptions<C> {
  health?: Partial<HealthOptions>;
  connect(origin: string): C;
  /** Resolves true when the replica is reachable and ready. Must not throw. */
  probe(replica: Replica<C>): Promise<boolean>;
  disconnect(conn: C): Promise<void>;
  logger?: Logger;
}

export interface ReplicaSnapshot {
  origin: string;
  state: ReplicaState;
  outstanding: number;
  requests: number;
  reason: string;
}

export class ReplicaSet<C> {
  private readonly replicas = new Map<string, Replica<C>>();
  /** Members announced by each discovery source; the set serves their union. */
  private readonly sources = new Map<string, ReadonlySet<string>>();
  private readonly probes = new Map<Replica<C>, { timer: NodeJS.Timeout | null; delay: number }>();
  private readonly health: HealthOptions;
  private cursor = 0;
  private closed = false;

  constructor(private readonly opts: ReplicaSetOptions<C>) {
    this.health = { ...DEFAULT_HEALTH, ...opts.health };
  }

  /** Sets the members one discovery source announces; others' members are kept. */
  update(source: string, origins: Iterable<string>): void {
    if (this.closed) return;
    this.sources.set(source, new Set(origins));
    const wanted = new Set<string>();
    for (const s of this.sources.values()) for (const o of s) wanted.add(o);
    const added: string[] = [];
    const removed: string[] = [];
    for (const origin of wanted) {
      if (this.replicas.has(origin)) continue;
      this.replicas.set(origin, { origin, conn: this.opts.connect(origin), outstanding: 0, state: 'up', failures: 0, reason: '', requests: 0, removed: false, probation: false, ejections: 0 });
      added.push(origin);
    }
    for (const [origin, r] of this.replicas) {
      if (wanted.has(origin)) continue;
      this.replicas.delete(origin);
      r.removed = true;
      this.stopProbe(r);
      removed.push(origin);
      // In-flight requests finish first: closing a pool waits for them and refuses new ones.
      void this.opts.disconnect(r.conn).catch(() => undefined);
    }
    if (added.length > 0 || removed.length > 0) this.opts.logger?.info({ source, added, removed, replicas: this.replicas.size }, 'model-server replicas changed');
  }

  size(): number {
    return this.replicas.size;
  }

  /**
   * The replica for the next request: the up replica with the fewest outstanding requests (other than
   * `exclude`), else the least loaded ejected one, else null.
   */
  pick(exclude?: Replica<C> | null): Replica<C> | null {
    const all = [...this.replicas.values()];
    if (all.length === 0) return null;
    const n = all.length;
    const start = this.cursor++ % n;
    let best: Replica<C> | null = null;
    let fallback: Replica<C> | null = null;
    for (let i = 0; i < n; i++) {
      const r = all[(start + i) % n]!;
      if (r === exclude) continue;
      if (r.state === 'up') {
        if (!best || r.outstanding < best.outstanding) best = r;
      } else if (!fallback || r.outstanding < fallback.outstanding) fallback = r;
    }
    return best ?? fallback;
  }

  /** Up replicas, or every replica when none is up. */
  candidates(): Replica<C>[] {
    const all = [...this.replicas.values()];
    const up = all.filter((r) => r.state === 'up');
    return up.length > 0 ? up : all;
  }

  /** A sane answer: the failure count restarts, and an ejected replica tried anyway (panic) is back. */
  succeeded(r: Replica<C>): void {
    r.failures = 0;
    if (r.state === 'down') this.readmit(r);
    r.probation = false;
    r.ejections = 0;
  }

  /** A failure that says the replica is unhealthy; the `ejectAfter`-th in a row ejects it. */
  failed(r: Replica<C>, kind: string): void {
    r.failures++;
    if (r.state !== 'up') return;
    if (r.probation) this.eject(r, `failed again after readmission (${kind})`);
    else if (r.failures >= this.health.ejectAfter) this.eject(r, `${r.failures} consecutive failures (last: ${kind})`);
  }

  /** The replica said it cannot serve yet (warming): out until a probe finds it ready. */
  notReady(r: Replica<C>, why: string): void {
    if (r.state === 'up') this.eject(r, why);
  }

  /** Back in rotation (a probe, or its readiness, found it ready). */
  readmit(r: Replica<C>): void {
    this.stopProbe(r);
    r.failures = 0;
    if (r.state === 'up' || r.removed) return;
    r.state = 'up';
    r.reason = '';
    r.probation = true;
    this.opts.logger?.info({ replica: r.origin }, 'model-server replica readmitted');
  }

  snapshot(): ReplicaSnapshot[] {
    return [...this.replicas.values()].map((r) => ({ origin: r.origin, state: r.state, outstanding: r.outstanding, requests: r.requests, reason: r.reason }));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const r of this.replicas.values()) this.stopProbe(r);
    const conns = [...this.replicas.values()].map((r) => r.conn);
    this.replicas.clear();
    await Promise.all(conns.map((c) => this.opts.disconnect(c).catch(() => undefined)));
  }

  private eject(r: Replica<C>, why: string): void {
    r.state = 'down';
    r.reason = why;
    r.probation = false;
    r.ejections++;
    this.opts.logger?.warn({ replica: r.origin, reason: why, ejections: r.ejections }, 'model-server replica ejected');
    this.scheduleProbe(r, Math.min(this.health.probeMs * 2 ** (r.ejections - 1), this.health.probeMaxMs));
  }

  private scheduleProbe(r: Replica<C>, delay: number): void {
    if (this.closed || r.removed) return;
    const p = this.probes.get(r) ?? { timer: null, delay };
    if (p.timer) return;
    p.delay = delay;
    p.timer = setTimeout(() => {
      p.timer = null;
      void this.opts.probe(r).then((ok) => {
        if (this.closed || r.removed || r.state === 'up') return;
        if (ok) this.readmit(r);
        else this.scheduleProbe(r, Math.min(p.delay * 2, this.health.probeMaxMs));
      });
    }, delay);
    p.timer.unref();
    this.probes.set(r, p);
  }

  private stopProbe(r: Replica<C>): void {
    const p = this.probes.get(r);
    if (p?.timer) clearTimeout(p.timer);
    this.probes.delete(r);
  }
}
