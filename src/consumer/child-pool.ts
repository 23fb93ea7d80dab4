import { performance } from 'node:perf_hooks';
import type { Containment } from '../sandbox/index.js';
import type { LogMessage } from './child-protocol.js';
import { RolloutChild } from './rollout-child.js';

/** Options of {@link ChildPool}; see `CompiledWorkerOptions` for units and defaults. */
export interface ChildPoolOptions {
  readonly allow: readonly string[];
  /** Largest output of a run, bytes of JSON (see `RolloutWorkerOptions.maxOutputBytes`). */
  readonly maxOutputBytes: number;
  readonly execArgv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly startTimeoutMs: number;
  /** Recycle a child after this many rollouts (`Infinity`: never by count). */
  readonly maxRolloutsPerChild: number;
  /** Recycle a child whose RSS after a rollout exceeds this many MiB. */
  readonly maxChildRssMb: number;
  /**
   * Most idle children kept over every heap limit together (the worker's slots: as many as can
   * run at once); past it the least recently used idle child is retired.
   */
  readonly maxIdle: number;
  readonly onLog: (message: LogMessage) => void;
  /** The worker's containment, given to every child. */
  readonly containment: Containment;
  /** Called whenever a child is forked or retired (metrics). */
  readonly onChildEvent?: (event: 'started' | 'recycled' | 'crashed') => void;
  /** Called when a background fork (warm-up or replacement) fails; the next `acquire` forks again. */
  readonly onWarmError?: (err: unknown) => void;
}

/**
 * A supervised pool of rollout children, replacing BullMQ's sandbox child pool (which
 * cancels only cooperatively, reuses children without caps, and hands them the worker's
 * whole environment; see BullMQ `src/classes/child-pool.ts`). Idle children are kept per
 * heap limit (`memoryMb` is a fork flag, so children are not interchangeable across it), at
 * most `maxIdle` of them in all: a run with another `sandbox.memoryMb` does not leave a set of
 * idle children behind for good.
 *
 * Warm: {@link warm} forks `count` children of one heap limit ahead of work (a child costs
 * ~100 ms CPU to boot), and a retired child of that limit is replaced in the background.
 * Retiring and replacing never sit on the reply path: {@link release} returns at once.
 */
export class ChildPool {
  private readonly idle = new Map<number, RolloutChild[]>();
  /** When each idle child was put idle (performance.now() ms), to retire the least recently used past `maxIdle`. */
  private readonly idleSince = new Map<RolloutChild, number>();
  private readonly busy = new Set<RolloutChild>();
  /** Background forks not yet ready, per heap limit. */
  private readonly starting = new Map<number, Promise<RolloutChild | undefined>[]>();
  /** Background kills in progress (awaited by `close`). */
  private readonly dying = new Set<Promise<void>>();
  private warmTarget = { memoryMb: 0, count: 0 };
  private closed = false;

  constructor(private readonly options: ChildPoolOptions) {}

  /** Pids of every live child (idle or busy). */
  pids(): number[] {
    const all = [...this.busy, ...[...this.idle.values()].flat()];
    return all.filter((child) => !child.exited && child.pid !== undefined).map((child) => child.pid as number);
  }

  /**
   * Forks children of heap limit `memoryMb` until `count` of them are live, and keeps that many
   * afterwards (retired ones are replaced in the background). Resolves once they are ready;
   * a fork that fails is reported through `onWarmError`, never thrown.
   */
  async warm(memoryMb: number, count: number): Promise<void> {
    this.warmTarget = { memoryMb, count };
    const forks: Promise<unknown>[] = [];
    while (!this.closed && this.live(memoryMb) < count) forks.push(this.fork(memoryMb));
    await Promise.all(forks);
  }

  /**
   * An idle child with this heap limit, a warm one still starting, or a new one.
   * @throws ChildStartError when a new child cannot start (real exit code, stderr tail).
   * @throws Error when the pool is closed.
   */
  async acquire(memoryMb: number): Promise<RolloutChild> {
    if (this.closed) throw new Error('child pool is closed (state: closed)');
    let child = this.idle.get(memoryMb)?.at(-1);
    while (child) {
      this.takeIdle(child);
      if (!child.exited) break;
      child = this.idle.get(memoryMb)?.at(-1);
    }
    if (!child) {
      const pending = this.starting.get(memoryMb)?.shift();
      if (pending) child = await pending;
      if (child) this.takeIdle(child);
    }
    if (!child || child.exited) {
      child = await RolloutChild.start({ ...this.options, memoryMb });
      this.options.onChildEvent?.('started');
    }
    if (this.closed) {
      void this.retire(child);
      throw new Error('child pool is closed (state: closed)');
    }
    this.busy.add(child);
    return child;
  }

  /**
   * Returns a child after a rollout, at once. It is retired (killed, in the background) when it
   * crashed, asked to be recycled, reached `maxRolloutsPerChild`, grew past `maxChildRssMb`, or
   * the pool is closed; a retired child of the warm heap limit is replaced in the background.
   * Each retired child is one `onChildEvent`: `crashed` when `crashed` says the child died on
   * its own during the rollout (it has exited by then), else `recycled`.
   */
  release(child: RolloutChild, options: { retire: boolean; crashed?: boolean }): void {
    this.busy.delete(child);
    const worn = child.rollouts >= this.options.maxRolloutsPerChild || child.rssBytes > this.options.maxChildRssMb * 1024 * 1024;
    if (options.retire || worn || this.closed || child.exited) {
      this.options.onChildEvent?.(options.crashed ? 'crashed' : 'recycled');
      void this.retire(child);
      if (!this.closed && child.memoryMb === this.warmTarget.memoryMb && this.live(child.memoryMb) < this.warmTarget.count) void this.fork(child.memoryMb);
      return;
    }
    this.putIdle(child);
  }

  /** Kills every child, idle, busy and starting; later `acquire` calls throw. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const starting = [...this.starting.values()].flat();
    this.starting.clear();
    const all = [...this.busy, ...[...this.idle.values()].flat()];
    this.idle.clear();
    this.idleSince.clear();
    await Promise.all([
      ...all.map((child) => child.kill()),
      ...starting.map(async (pending) => (await pending)?.kill()),
      ...this.dying,
    ]);
  }

  /** Live children of a heap limit: idle, busy or starting. */
  private live(memoryMb: number): number {
    const idle = (this.idle.get(memoryMb) ?? []).filter((child) => !child.exited).length;
    const busy = [...this.busy].filter((child) => child.memoryMb === memoryMb).length;
    return idle + busy + (this.starting.get(memoryMb)?.length ?? 0);
  }

  /** Forks one child in the background; ready, it waits idle (unless an `acquire` took it first). */
  private fork(memoryMb: number): Promise<RolloutChild | undefined> {
    const pending = RolloutChild.start({ ...this.options, memoryMb }).then(
      (child) => {
        this.options.onChildEvent?.('started');
        const list = this.starting.get(memoryMb);
        const index = list?.indexOf(pending) ?? -1;
        if (index >= 0) {
          // Nobody claimed it while it booted: it waits idle.
          list?.splice(index, 1);
          if (this.closed) void this.retire(child);
          else this.putIdle(child);
        }
        return child;
      },
      (err: unknown) => {
        const list = this.starting.get(memoryMb);
        const index = list?.indexOf(pending) ?? -1;
        if (index >= 0) list?.splice(index, 1);
        this.options.onWarmError?.(err);
        return undefined;
      },
    );
    const list = this.starting.get(memoryMb) ?? [];
    list.push(pending);
    this.starting.set(memoryMb, list);
    return pending;
  }

  private putIdle(child: RolloutChild): void {
    const list = this.idle.get(child.memoryMb) ?? [];
    if (!list.includes(child)) list.push(child);
    this.idle.set(child.memoryMb, list);
    this.idleSince.set(child, performance.now());
    while (this.idleSince.size > this.options.maxIdle) {
      let oldest: RolloutChild | undefined;
      for (const [idle, since] of this.idleSince) if (idle !== child && (!oldest || since < (this.idleSince.get(oldest) ?? 0))) oldest = idle;
      if (!oldest) break;
      this.takeIdle(oldest);
      this.options.onChildEvent?.('recycled');
      void this.retire(oldest);
    }
  }

  /** Removes a child from the idle ones (taken for a rollout, or retired). */
  private takeIdle(child: RolloutChild): void {
    const list = this.idle.get(child.memoryMb);
    const index = list?.indexOf(child) ?? -1;
    if (index >= 0) list?.splice(index, 1);
    if (list?.length === 0) this.idle.delete(child.memoryMb);
    this.idleSince.delete(child);
  }

  private retire(child: RolloutChild): Promise<void> {
    const dying = child.kill().finally(() => this.dying.delete(dying));
    this.dying.add(dying);
    return dying;
  }
}
