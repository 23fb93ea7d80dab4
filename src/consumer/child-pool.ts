import type { Containment } from '../sandbox/index.js';
import type { LogMessage } from './child-protocol.js';
import { RolloutChild } from './rollout-child.js';

/** Options of {@link ChildPool}; see `CompiledWorkerOptions` for units and defaults. */
export interface ChildPoolOptions {
  readonly allow: readonly string[];
  readonly execArgv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly startTimeoutMs: number;
  /** Recycle a child after this many rollouts. */
  readonly maxRolloutsPerChild: number;
  /** Recycle a child whose RSS after a rollout exceeds this many MiB. */
  readonly maxChildRssMb: number;
  readonly onLog: (message: LogMessage) => void;
  /** The worker's containment, given to every child. */
  readonly containment: Containment;
  /** Called whenever a child is forked or retired (metrics). */
  readonly onChildEvent?: (event: 'started' | 'recycled' | 'crashed') => void;
}

/**
 * A supervised pool of rollout children, replacing BullMQ's sandbox child pool (which
 * cancels only cooperatively, reuses children without caps, and hands them the worker's
 * whole environment; see BullMQ `src/classes/child-pool.ts`). Idle children are kept per
 * heap limit (`memoryMb` is a fork flag, so children are not interchangeable across it).
 */
export class ChildPool {
  private readonly idle = new Map<number, RolloutChild[]>();
  private readonly busy = new Set<RolloutChild>();
  private closed = false;

  constructor(private readonly options: ChildPoolOptions) {}

  /** Pids of every live child (idle or busy). */
  pids(): number[] {
    const all = [...this.busy, ...[...this.idle.values()].flat()];
    return all.filter((child) => !child.exited && child.pid !== undefined).map((child) => child.pid as number);
  }

  /**
   * An idle child with this heap limit, or a new one.
   * @throws ChildStartError when a new child cannot start (real exit code, stderr tail).
   * @throws Error when the pool is closed.
   */
  async acquire(memoryMb: number): Promise<RolloutChild> {
    if (this.closed) throw new Error('child pool is closed (state: closed)');
    const list = this.idle.get(memoryMb) ?? [];
    let child = list.pop();
    while (child && child.exited) child = list.pop();
    if (!child) {
      child = await RolloutChild.start({ ...this.options, memoryMb });
      this.options.onChildEvent?.('started');
    }
    this.busy.add(child);
    return child;
  }

  /**
   * Returns a child after a rollout. It is retired (killed) when it crashed, asked to be
   * recycled, reached `maxRolloutsPerChild`, grew past `maxChildRssMb`, or the pool is closed.
   * Each retired child is one `onChildEvent`: `crashed` when `crashed` says the child died on
   * its own during the rollout (it has exited by then), else `recycled`.
   */
  async release(child: RolloutChild, options: { retire: boolean; crashed?: boolean }): Promise<void> {
    this.busy.delete(child);
    const worn = child.rollouts >= this.options.maxRolloutsPerChild || child.rssBytes > this.options.maxChildRssMb * 1024 * 1024;
    if (options.retire || worn || this.closed || child.exited) {
      this.options.onChildEvent?.(options.crashed ? 'crashed' : 'recycled');
      await child.kill();
      return;
    }
    const list = this.idle.get(child.memoryMb) ?? [];
    list.push(child);
    this.idle.set(child.memoryMb, list);
  }

  /** Kills every child, idle and busy; later `acquire` calls throw. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.busy, ...[...this.idle.values()].flat()];
    this.idle.clear();
    await Promise.all(all.map((child) => child.kill()));
  }
}
