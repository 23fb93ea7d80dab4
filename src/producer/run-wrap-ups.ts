import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import { COORDINATOR_LEASE_MS } from './coordinator-lease.js';
import { PRUNE_EVERY_RUNS, pruneRunList } from './run-list-pruner.js';

/**
 * The wrap-ups of runs whose last Result was delivered (acknowledgement of the Results taken,
 * completion mark, retention, coordinator lease release), run in the background so `rollout()`
 * and a consumer breaking out return at once. Every {@link PRUNE_EVERY_RUNS} wrap-ups, the run
 * list is pruned of expired runs after it.
 */
export class RunWrapUps {
  /** Wrap-ups in flight by run id; each never rejects. */
  private readonly wrapUps = new Map<string, Promise<void>>();
  /** Wrap-ups tracked, modulo {@link PRUNE_EVERY_RUNS}: every that many, the run list is pruned. */
  private wrapUpCount = 0;

  constructor(private readonly redis: Redis, private readonly keys: QueueKeys, private readonly logger: Logger) {}

  /** Runs `work`, the wrap-up of `runId`; a failure is logged (the next session of the run completes it). */
  track(runId: string, work: () => Promise<void>): void {
    this.wrapUpCount = (this.wrapUpCount + 1) % PRUNE_EVERY_RUNS;
    const prune = this.wrapUpCount === 0;
    const done = work().catch((err: Error) => {
      this.logger.warn({ runId, err: err.message }, 'wrapping up a delivered run failed; the next session of the run (mapRollouts or attach with its runId) completes it');
    }).then(() => prune ? this.pruneRuns() : undefined);
    this.wrapUps.set(runId, done);
    void done.then(() => {
      if (this.wrapUps.get(runId) === done) this.wrapUps.delete(runId);
    });
  }

  /** The wrap-up of `runId` in flight, or a resolved promise. Never rejects. */
  of(runId: string): Promise<void> {
    return this.wrapUps.get(runId) ?? Promise.resolve();
  }

  /** Resolves once the wrap-up of `runId` (or of every run) is done. Never rejects. */
  async settled(runId?: string): Promise<void> {
    if (runId !== undefined) return this.wrapUps.get(runId);
    await Promise.all(this.wrapUps.values());
  }

  /**
   * Waits for the wrap-ups in flight, at most {@link COORDINATOR_LEASE_MS}: Redis unreachable
   * for longer, their lease has expired anyway and the next session of each run completes it.
   */
  async awaitAll(): Promise<void> {
    if (this.wrapUps.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), COORDINATOR_LEASE_MS)));
    const timedOut = await Promise.race([this.settled().then(() => false), late]);
    clearTimeout(timer);
    if (timedOut) this.logger.warn({ runs: [...this.wrapUps.keys()] }, `close(): runs still wrapping up after ${COORDINATOR_LEASE_MS} ms (Redis unreachable?); the next session of each run completes it`);
  }

  /** Takes expired runs out of the run list (see `pruneRunList`); a failure only waits for the next prune. */
  private async pruneRuns(): Promise<void> {
    const pruned = await pruneRunList(this.redis, this.keys).catch((err: Error) => {
      this.logger.debug({ err: err.message }, 'pruning the run list failed; the next prune retries');
      return 0;
    });
    if (pruned > 0) this.logger.debug({ pruned }, 'expired runs taken out of the run list');
  }
}
