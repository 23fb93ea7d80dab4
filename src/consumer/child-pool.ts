import { performance } from 'node:perf_hooks';
import type { Containment } from '../sandbox/index.js';
import type { LogMessage } from './child-protocol.js';
import { RolloutChild, type RolloutChildOptions } from './rollout-child.js';

/** An extra child (beyond the warm ones) idle this long is retired, ms. */
export const IDLE_RETIRE_MS = 60_000;

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
  /** Shared children per heap limit: the rollouts of one `sandbox.memoryMb` spread over at most this many. */
  readonly children: number;
  /**
   * Most idle children kept over every heap limit and kind together; past it the least recently
   * used idle child is retired.
   */
  readonly maxIdle: number;
  /** A child holding two rollouts or more whose event loop has not turned for this long is killed, ms (the watchdog). */
  readonly blockedLoopMs: number;
  readonly onLog: (message: LogMessage) => void;
  /** The worker's containment, given to every child. */
  readonly containment: Containment;
  /** Called whenever a child is forked or retired (metrics): `crashed` when it died on its own. */
  readonly onChildEvent?: (event: 'started' | 'recycled' | 'crashed') => void;
  /** Called when a background fork (warm-up or replacement) fails; the next `acquire` forks again. */
  readonly onWarmError?: (err: unknown) => void;
}

type Kind = RolloutChild['kind'];

/**
 * A supervised pool of rollout children, replacing BullMQ's sandbox child pool (which
 * cancels only cooperatively, reuses children without caps, and hands them the worker's
 * whole environment; see BullMQ `src/classes/child-pool.ts`). A worker's slots are not
 * processes: `shared` children host many rollouts each, at most `children` of them per heap
 * limit (`sandbox.memoryMb` is a fork flag, so children are not interchangeable across it), and
 * a rollout goes to the least loaded one. A `solo` child hosts one rollout at a time: for a spec
 * asking for it (`sandbox.isolation: "process"`) and for a lease involved in a crash; idle ones
 * are reused for later solo rollouts.
 *
 * Warm: {@link warm} forks shared children of one heap limit ahead of work (a child costs ~100 ms
 * CPU to boot); one that retires or drains is replaced in the background, so the reply path never
 * waits for a fork while a child of that limit is up. A child drains (takes no new rollouts,
 * retired once empty) when it is worn (`maxRolloutsPerChild`, `maxChildRssMb`) or asked to.
 * The watchdog kills a child whose loop is blocked with several rollouts in it
 * ({@link RolloutChild.blockedFor}).
 */
export class ChildPool {
  /** Every started child not retired, idle or busy. */
  private readonly live = new Set<RolloutChild>();
  /** Shared forks not yet ready, per heap limit (they join `live` idle). */
  private readonly starting = new Map<number, Promise<RolloutChild>[]>();
  /** Background kills in progress (awaited by `close`). */
  private readonly dying = new Set<Promise<void>>();
  private warmTarget = { memoryMb: 0, count: 0 };
  private closed = false;
  private readonly watchdog: NodeJS.Timeout;

  constructor(private readonly options: ChildPoolOptions) {
    this.watchdog = setInterval(() => this.tick(), Math.min(1000, Math.max(50, Math.floor(options.blockedLoopMs / 4))));
    this.watchdog.unref();
  }

  /** Pids of every live child (idle or busy). */
  pids(): number[] {
    return [...this.live].filter((child) => !child.exited && child.pid !== undefined).map((child) => child.pid as number);
  }

  /**
   * Forks shared children of heap limit `memoryMb` until `count` of them are up, and keeps that
   * many afterwards (retired or draining ones are replaced in the background). Resolves once they
   * are ready; a fork that fails is reported through `onWarmError`, never thrown.
   */
  async warm(memoryMb: number, count: number): Promise<void> {
    this.warmTarget = { memoryMb, count };
    await Promise.all(this.topUp());
  }

  /**
   * A child for one rollout of heap limit `memoryMb`, its `load` counted (give it back with
   * {@link release}). Shared: the least loaded shared child of that limit (forking another in the
   * background while there are fewer than `children`), or one still starting, or a new one.
   * Solo: an idle solo child of that limit, or a new one.
   * @throws ChildStartError when a new child cannot start (real exit code, stderr tail).
   * @throws Error when the pool is closed.
   */
  async acquire(memoryMb: number, how: { readonly solo: boolean }): Promise<RolloutChild> {
    if (this.closed) throw new Error('child pool is closed (state: closed)');
    const child = how.solo ? await this.soloChild(memoryMb) : await this.sharedChild(memoryMb);
    if (this.closed) {
      this.release(child);
      throw new Error('child pool is closed (state: closed)');
    }
    return child;
  }

  private async sharedChild(memoryMb: number): Promise<RolloutChild> {
    for (;;) {
      let best: RolloutChild | undefined;
      let count = 0;
      for (const child of this.live) {
        if (!this.usable(child, 'shared', memoryMb)) continue;
        count++;
        if (!best || child.load < best.load) best = child;
      }
      const starting = this.starting.get(memoryMb) ?? [];
      if (best) {
        if (best.load > 0 && count + starting.length < this.options.children) void this.forkShared(memoryMb).catch((err: unknown) => this.options.onWarmError?.(err));
        return this.take(best);
      }
      // None up: wait for one starting (a fork that fails is the caller's error, as its own would be).
      await (starting[0] ?? this.forkShared(memoryMb));
    }
  }

  private async soloChild(memoryMb: number): Promise<RolloutChild> {
    for (const child of this.live) if (this.usable(child, 'solo', memoryMb) && child.load === 0) return this.take(child);
    const child = await this.start(memoryMb, 'solo');
    this.live.add(child);
    return this.take(child);
  }

  private usable(child: RolloutChild, kind: Kind, memoryMb: number): boolean {
    return child.kind === kind && child.memoryMb === memoryMb && !child.exited && !child.draining;
  }

  private take(child: RolloutChild): RolloutChild {
    child.load++;
    // Its last rollout by count is placed: it takes no more, and is retired once empty.
    if (++child.placed >= this.options.maxRolloutsPerChild) child.draining = true;
    return child;
  }

  /**
   * Gives a child back after its rollout, at once. A child that exited, drains (worn, asked to
   * recycle, too many abandoned rollouts) or belongs to a closed pool is retired once empty, in the
   * background, and replaced when it was one of the warm ones; an idle one past `maxIdle` too.
   */
  release(child: RolloutChild): void {
    child.load = Math.max(0, child.load - 1);
    if (!this.live.has(child)) return;
    if (child.exited || ((child.draining || this.closed) && child.load === 0)) {
      this.retire(child);
      this.topUp();
      return;
    }
    if (child.draining) {
      this.topUp();
      return;
    }
    if (child.load === 0) {
      child.idleSince = performance.now();
      this.trimIdle(child);
    }
  }

  /** Kills every child, idle, busy and starting; later `acquire` calls throw. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.watchdog);
    const starting = [...this.starting.values()].flat();
    this.starting.clear();
    const all = [...this.live];
    this.live.clear();
    await Promise.all([
      ...all.map((child) => child.kill()),
      ...starting.map(async (pending) => (await pending.catch(() => undefined))?.kill()),
      ...this.dying,
    ]);
  }

  /** Forks in the background the warm shared children missing (retired or draining ones); returns the forks. */
  private topUp(): Promise<unknown>[] {
    const { memoryMb, count } = this.warmTarget;
    let up = this.starting.get(memoryMb)?.length ?? 0;
    for (const child of this.live) if (this.usable(child, 'shared', memoryMb)) up++;
    const forks: Promise<unknown>[] = [];
    for (; !this.closed && up < count; up++) forks.push(this.forkShared(memoryMb).catch((err: unknown) => this.options.onWarmError?.(err)));
    return forks;
  }

  /** Forks one shared child; ready, it joins the pool idle. */
  private forkShared(memoryMb: number): Promise<RolloutChild> {
    const pending = this.start(memoryMb, 'shared').then(
      (child) => {
        this.forget(memoryMb, pending);
        if (this.closed) {
          void child.kill();
          throw new Error('child pool is closed (state: closed)');
        }
        child.idleSince = performance.now();
        this.live.add(child);
        return child;
      },
      (err: unknown) => {
        this.forget(memoryMb, pending);
        throw err;
      },
    );
    const list = this.starting.get(memoryMb) ?? [];
    list.push(pending);
    this.starting.set(memoryMb, list);
    return pending;
  }

  private forget(memoryMb: number, pending: Promise<RolloutChild>): void {
    const list = this.starting.get(memoryMb);
    const index = list?.indexOf(pending) ?? -1;
    if (index >= 0) list?.splice(index, 1);
    if (list?.length === 0) this.starting.delete(memoryMb);
  }

  private async start(memoryMb: number, kind: Kind): Promise<RolloutChild> {
    const { allow, maxOutputBytes, execArgv, env, startTimeoutMs, onLog, containment, maxRolloutsPerChild, maxChildRssMb } = this.options;
    const options: RolloutChildOptions = { memoryMb, kind, allow, maxOutputBytes, execArgv, env, startTimeoutMs, onLog, containment, maxRolloutsPerChild, maxChildRssMb };
    const child = await RolloutChild.start(options);
    this.options.onChildEvent?.('started');
    return child;
  }

  /** Retires the least recently idle children past `maxIdle` (never `keep`, just given back). */
  private trimIdle(keep: RolloutChild): void {
    const idle = [...this.live].filter((child) => child.load === 0 && !child.exited);
    if (idle.length <= this.options.maxIdle) return;
    idle.sort((a, b) => a.idleSince - b.idleSince);
    for (const child of idle) {
      if (idle.length-- <= this.options.maxIdle) break;
      if (child !== keep) this.retire(child);
    }
  }

  /** The watchdog, and the retiring of extra children idle for {@link IDLE_RETIRE_MS}. */
  private tick(): void {
    const now = performance.now();
    const { memoryMb: warmMb, count: warmCount } = this.warmTarget;
    let warmKept = 0;
    for (const child of [...this.live]) {
      if (child.running >= 2) child.blockedFor(this.options.blockedLoopMs);
      if (child.load > 0) continue;
      if (child.exited) {
        // Died between rollouts (a stray timer of a finished one): gone from the pool, replaced.
        this.retire(child);
        this.topUp();
        continue;
      }
      const warm = child.kind === 'shared' && child.memoryMb === warmMb && !child.draining && warmKept++ < warmCount;
      if (!warm && now - child.idleSince >= IDLE_RETIRE_MS) this.retire(child);
    }
  }

  /** Removes a child from the pool and kills it in the background (an exited one is only reclaimed). */
  private retire(child: RolloutChild): void {
    if (!this.live.delete(child)) return;
    this.options.onChildEvent?.(child.diedOnItsOwn ? 'crashed' : 'recycled');
    const dying = child.kill().finally(() => this.dying.delete(dying));
    this.dying.add(dying);
  }
}
