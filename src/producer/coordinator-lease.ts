import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { redisScript } from '../platform/redis-script.js';
import type { Logger } from '../platform/logger.js';

/** Lifetime of a coordinator lease without renewal, ms: a SIGKILLed coordinator's run is free again after this. */
export const COORDINATOR_LEASE_MS = 6000;

/**
 * How long a coordinator whose lease another coordinator took waits for it to become free
 * again before it gives up with {@link CoordinatorLeaseLostError}, ms (as long as `acquire` waits).
 */
export const LEASE_LOST_WAIT_MS = COORDINATOR_LEASE_MS * 2;

/**
 * Our own view of the lease ends this long before the Redis key can expire, ms: the fence
 * closes early rather than late (clock rates of Redis and this host differ by parts per million).
 */
const FENCE_MARGIN_MS = 500;

// Renew while we hold it; take it again (same token) when it is free; else report the holder.
// Returns 1 renewed, 2 retaken, or the other holder's value. KEYS: lease. ARGV: token, ttl.
const RENEW = redisScript('rqCoordinatorRenew', `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 2 end
return v`, 1);
const RELEASE = redisScript('rqCoordinatorRelease', `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, 1);

/** Thrown when another live coordinator is delivering the same run. */
export class RunBusyError extends Error {
  constructor(readonly runId: string, readonly holder: string) {
    super(`run "${runId}" is being delivered by another coordinator (${holder}); two coordinators of one run would each receive every Result. Wait for it to finish, stop it, or use another run id`);
    this.name = 'RunBusyError';
  }
}

/**
 * Thrown by a run's iterator when another coordinator took this one's lease (this process
 * was paused, or cut off from Redis, longer than {@link COORDINATOR_LEASE_MS}) and kept it
 * past {@link LEASE_LOST_WAIT_MS}. Nothing was delivered or acknowledged after the loss.
 */
export class CoordinatorLeaseLostError extends Error {
  constructor(readonly runId: string, readonly holder: string) {
    super(`run "${runId}": this coordinator lost its lease (paused or cut off from Redis for more than ${COORDINATOR_LEASE_MS} ms) and another coordinator (${holder}) delivers the run now; ` +
      'this one stopped delivering at once, so no Result reaches two results files; let the other one finish, or resume the run after it stopped');
    this.name = 'CoordinatorLeaseLostError';
  }
}

/**
 * One attempt to take a coordinator lease key: set it to `token` for `ttlMs` unless it exists.
 * Resolves `{ taken: true, value }` when set, else `{ taken: false, holder }` (the key's value,
 * null when it vanished in between).
 */
export type LeaseTake<T> = (token: string, ttlMs: number) => Promise<{ readonly taken: true; readonly value: T } | { readonly taken: false; readonly holder: string | null }>;

/** The plain attempt: `SET NX PX`, then `GET` of the holder when it failed. */
const setNx = (redis: Redis, key: string): LeaseTake<undefined> => async (token, ttlMs) => {
  if ((await redis.set(key, token, 'PX', ttlMs, 'NX')) === 'OK') return { taken: true, value: undefined };
  return { taken: false, holder: await redis.get(key) };
};

/** Where this coordinator stands with its lease. */
type LeaseState = 'held' | 'expired' | 'taken';

/**
 * The right to deliver one run's Results, used as a fencing token: at most one coordinator
 * process delivers (yields, acknowledges, appends) at a time, so each Result reaches exactly
 * one results file. A Redis key holding our random token with a TTL, renewed every third of it.
 *
 * - {@link holds} is true only until {@link COORDINATOR_LEASE_MS} (minus a margin) after the
 *   *start* of the last successful renewal, by this process's monotonic clock, so it turns false
 *   before the Redis key can expire: when a second coordinator is admitted (the key expired),
 *   the first one can no longer pass its fence, even if it was SIGSTOPped and knows nothing yet.
 * - The acknowledge script compares the key with {@link token} atomically (the Redis-side fence).
 * - A lost lease is retaken (same token) as soon as the key is free; held by another
 *   coordinator, {@link waitHeld} gives up after {@link LEASE_LOST_WAIT_MS}.
 * A coordinator killed with SIGKILL stops renewing and a restarted one takes over within the TTL.
 */
export class CoordinatorLease {
  private readonly timer: NodeJS.Timeout;
  private validUntil: number;
  private state: LeaseState = 'held';
  private holder = 'unknown';
  private takenSince: number | undefined;
  private released = false;
  private renewing: Promise<void> | undefined;
  private waiters: (() => void)[] = [];
  private epochValue = 0;

  private constructor(
    private readonly redis: Redis,
    private readonly key: string,
    /** The value of the lease key while we hold it: JSON {token, pid, host}. */
    readonly token: string,
    private readonly logger: Logger,
    private readonly runId: string,
    takenAt: number,
  ) {
    this.validUntil = takenAt + COORDINATOR_LEASE_MS - FENCE_MARGIN_MS;
    this.timer = setInterval(() => {
      // First our own clock: a renewal stuck in the offline queue (Redis down) must not keep the fence open.
      this.holds();
      void this.renew();
    }, COORDINATOR_LEASE_MS / 3);
    this.timer.unref();
  }

  /**
   * Takes the lease of `runId`, waiting while a previous holder's lease has not expired. `take`
   * makes one attempt (default: `SET NX PX`); a script that also reads or writes the run in the
   * same round trip returns what it found as `value`.
   * @returns the lease and the `value` of the attempt that took it.
   * @throws RunBusyError when another coordinator keeps renewing it past the wait.
   * @throws whatever `take` throws (a Redis error).
   */
  static async acquire<T = undefined>(redis: Redis, key: string, runId: string, logger: Logger, take: LeaseTake<T> = setNx(redis, key) as LeaseTake<T>): Promise<{ lease: CoordinatorLease; value: T }> {
    const token = JSON.stringify({ token: randomUUID(), pid: process.pid, host: os.hostname() });
    const until = performance.now() + COORDINATOR_LEASE_MS * 2;
    let told = false;
    for (;;) {
      const sentAt = performance.now();
      const attempt = await take(token, COORDINATOR_LEASE_MS);
      if (attempt.taken) return { lease: new CoordinatorLease(redis, key, token, logger, runId, sentAt), value: attempt.value };
      const who = attempt.holder ? describeHolder(attempt.holder) : 'unknown';
      if (performance.now() > until) throw new RunBusyError(runId, who);
      if (!told) {
        logger.warn({ runId, holder: who }, 'another coordinator holds this run; waiting for its lease to expire (it may have been killed)');
        told = true;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** True while this coordinator may deliver: the lease is ours and cannot have expired in Redis yet. */
  holds(): boolean {
    if (this.released) return false;
    if (this.state === 'held' && performance.now() >= this.validUntil) this.lose('expired');
    return this.state === 'held';
  }

  /**
   * Counts the times the lease key was found free and taken again: when it changed, another
   * coordinator may have delivered meanwhile, so re-read what is delivered before delivering.
   */
  get epoch(): number {
    return this.epochValue;
  }

  /**
   * Resolves once {@link holds} is true again, renewing (and retaking) at once instead of at the
   * next tick. While Redis cannot be reached it keeps waiting (nobody can deliver then).
   * @throws CoordinatorLeaseLostError when another coordinator held the lease for {@link LEASE_LOST_WAIT_MS}.
   * @throws Error when the lease was released.
   */
  async waitHeld(): Promise<void> {
    for (;;) {
      if (this.holds()) return;
      if (this.released) throw new Error(`run "${this.runId}": the coordinator lease was released; this session is over`);
      if (this.state === 'taken' && this.takenSince !== undefined && performance.now() - this.takenSince >= LEASE_LOST_WAIT_MS) {
        throw new CoordinatorLeaseLostError(this.runId, this.holder);
      }
      const changed = new Promise<void>((resolve) => this.waiters.push(resolve));
      const pause = new Promise<void>((resolve) => setTimeout(resolve, 250).unref());
      void this.renew();
      await Promise.race([changed, pause]);
    }
  }

  /** Gives the run up (idempotent); a Redis error is ignored, the TTL frees it anyway. */
  async release(): Promise<void> {
    if (this.released) return;
    this.markReleased();
    await RELEASE.run(this.redis, [this.key], [this.token]).catch(() => undefined);
  }

  /**
   * The lease key was deleted for this holder by a script of the caller's (the run's retention,
   * `applyRetention` with a lease to release): stops renewing as {@link release} does, without
   * a call of its own. Idempotent.
   */
  markReleased(): void {
    if (this.released) return;
    this.released = true;
    clearInterval(this.timer);
    this.wake();
  }

  private renew(): Promise<void> {
    if (this.released) return Promise.resolve();
    this.renewing ??= (async () => {
      const sentAt = performance.now();
      try {
        const reply = await RENEW.run(this.redis, [this.key], [this.token, COORDINATOR_LEASE_MS]);
        if (this.released) return;
        if (reply === 1 || reply === 2) {
          const wasLost = this.state !== 'held' || performance.now() >= this.validUntil;
          this.validUntil = sentAt + COORDINATOR_LEASE_MS - FENCE_MARGIN_MS;
          // The key was free: someone may have held it in between (epoch), even if we never noticed a gap.
          if (reply === 2) this.epochValue++;
          this.state = 'held';
          this.takenSince = undefined;
          if (wasLost && this.holds()) this.logger.warn({ runId: this.runId }, 'retook the coordinator lease of this run; re-reading what was delivered meanwhile before delivering again');
        } else {
          this.holder = describeHolder(String(reply));
          this.lose('taken');
        }
      } catch {
        // Redis unreachable: ioredis reconnects; the fence closes by itself when validUntil passes.
        this.holds();
      } finally {
        this.renewing = undefined;
        this.wake();
      }
    })();
    return this.renewing;
  }

  private lose(how: Exclude<LeaseState, 'held'>): void {
    if (this.state === how) return;
    const first = this.state === 'held';
    this.state = how;
    if (how === 'taken') this.takenSince = performance.now();
    if (first || how === 'taken') {
      this.logger.error(
        { runId: this.runId, ...(how === 'taken' ? { holder: this.holder } : {}) },
        how === 'taken'
          ? `lost the coordinator lease of this run to another coordinator (${this.holder}); this coordinator stopped delivering at once and waits up to ${LEASE_LOST_WAIT_MS} ms for it to be free`
          : `lost the coordinator lease of this run (no renewal for ${COORDINATOR_LEASE_MS - FENCE_MARGIN_MS} ms: Redis unreachable or this process paused); delivering nothing until it is retaken`,
      );
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}

/** Who holds a coordinator lease, from its key's value (JSON {token, pid, host}); nulls where the value does not say. */
export function leaseHolder(json: string): { readonly pid: number | null; readonly host: string | null } {
  try {
    const { pid, host } = JSON.parse(json) as { pid?: unknown; host?: unknown };
    return { pid: Number.isInteger(pid) ? (pid as number) : null, host: typeof host === 'string' ? host : null };
  } catch {
    return { pid: null, host: null };
  }
}

function describeHolder(json: string): string {
  const { pid, host } = leaseHolder(json);
  return pid === null && host === null ? 'unknown' : `pid ${pid} on ${host}`;
}
