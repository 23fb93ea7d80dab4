import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.js';
import { KeptAnswers } from './kept-answers.js';
import type { AnswerKeeper } from './lease-worker.js';
import { RedisAnswerProbe } from './redis-answer-probe.js';

/** What the guard needs of a BullMQ worker of this process (`LeaseWorker`). */
export interface LeaseHolder {
  /** The queue it serves (BullMQ's `Worker.name`). */
  readonly name: string;
  /** Every attempt it runs now: lease id, lock token, the job's stalled count at the attempt's start. */
  runningLeases(): Array<{ leaseId: string; token: string; stalledCount: number }>;
  /** The attempt of `leaseId` it runs, if any. */
  attemptOf(leaseId: string): { token: string; stalledCount: number } | undefined;
}

/** Settings of a {@link RedisStallGuard}. */
export interface RedisStallGuardOptions {
  /** The redacted Redis address, for log lines and `/healthz`. */
  readonly address: string;
  /** BullMQ key prefix of the served queues. */
  readonly prefix: string;
  /** BullMQ `lockDuration` of the workers, ms: a reclaimed lock lasts this long. */
  readonly lockDurationMs: number;
  /** BullMQ `stalledInterval`, ms. */
  readonly stalledIntervalMs: number;
  /** `ROLLOUT_QUEUE_REDIS_TIMEOUT_MS`, the command timeout of `redis`, ms. */
  readonly timeoutMs: number;
}

/**
 * What a worker does about a Redis that stops answering (issue 33 items 1 and 2), in one place:
 * a probe that says so (`/healthz` 503 within the timeout plus 1 s), the answers kept while Redis
 * does not take them, and the leases whose locks expired during the stall taken back when nobody
 * else has them, so no rollout, running or finished, runs again because Redis stalled.
 * See docs/redis-trouble.md.
 */
export class RedisStallGuard {
  private readonly probe: RedisAnswerProbe;
  private readonly kept: KeptAnswers;
  /** Handed to each BullMQ worker (`LeaseWorker.answerKeeper`). */
  readonly keeper: AnswerKeeper;

  /**
   * @param redis the worker's command client (with `commandTimeout`): probes and reclaims go there.
   * @param holders every BullMQ worker of the process, now (placement queues come and go).
   * @param onDropped a kept answer lost to another attempt: count it as a late duplicate.
   */
  constructor(
    redis: Redis,
    private readonly options: RedisStallGuardOptions,
    private readonly logger: Logger,
    holders: () => readonly LeaseHolder[],
    onDropped: (leaseId: string) => void,
  ) {
    this.probe = new RedisAnswerProbe(redis, options.address, options.timeoutMs, logger);
    const kept = (this.kept = new KeptAnswers(redis, options.prefix, options.lockDurationMs, logger, { onDropped }));
    const probe = this.probe;
    this.keeper = { get silent() { return probe.silent; }, keep: (...args) => kept.keep(...args) };
    // Sent as soon as Redis is slow to answer (and again once silent), these run as it wakes:
    // locks that expired meanwhile are this worker's again before BullMQ's stalled checks (also
    // waiting, each every stalledInterval) can give the leases away; sent early, they reach Redis
    // before most of those. Idempotent: a lease still this worker's only has its lock extended.
    const reclaimAll = (): void => {
      for (const holder of holders()) kept.reclaimAhead(holder.name, holder.runningLeases());
    };
    this.probe.onSlow(reclaimAll);
    this.probe.onSilent(reclaimAll);
    this.probe.onAnswered(() => void kept.handInAll());
  }

  /** Starts the probe. */
  start(): void {
    this.probe.start();
  }

  /** True while Redis does not answer the probe. */
  get silent(): boolean {
    return this.probe.silent;
  }

  /** Why `/healthz` should say 503 (Redis has not answered for N ms), or undefined. */
  healthReason(): string | undefined {
    return this.probe.reason();
  }

  /**
   * A lock renewal of `leaseId` failed. Right after Redis stalled (the probe saw it silent within a
   * lock's life) the lock most likely expired during the stall with nobody else taking the lease:
   * it is reclaimed (`reclaimLease`) and the caller lets the rollout go on.
   * @returns true when the lease is the attempt's again; false when the caller should abort it
   *   (no stall, another attempt holds it, or Redis did not answer).
   */
  async keepAfterLockLoss(holder: LeaseHolder, leaseId: string): Promise<boolean> {
    const attempt = holder.attemptOf(leaseId);
    const windowMs = this.options.lockDurationMs + 2 * this.options.stalledIntervalMs + this.options.timeoutMs;
    if (attempt === undefined || !this.probe.silentWithin(windowMs)) return false;
    const outcome = await this.kept.reclaim(holder.name, leaseId, attempt.token, attempt.stalledCount).catch(() => undefined);
    if (outcome?.state !== 'ours' && outcome?.state !== 'reclaimed') return false;
    this.logger.info({ leaseId, lease: outcome.state }, 'lock renewal failed after Redis stalled; nobody else had the lease, so it is this attempt\'s again and the rollout goes on');
    return true;
  }

  /**
   * At shutdown, before the BullMQ workers close (kept answers go in through their connections):
   * one last hand-in, bounded by `waitMs`.
   */
  async handInBeforeClose(waitMs: number): Promise<void> {
    if (this.kept.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.kept.handInAll(), new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  /** Stops the probe and gives up what is still kept (logged: those leases run again). */
  close(): void {
    this.kept.close();
    this.probe.stop();
  }
}
