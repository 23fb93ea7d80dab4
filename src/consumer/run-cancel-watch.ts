import type { Redis } from 'ioredis';
import { RUN_FIELDS, type QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import type { RolloutProcessor } from './rollout-processor.js';

/**
 * The two paths by which a worker learns that a run was cancelled, both ending in
 * `processor.abort(…, 'cancelled')` for the run's active rollouts here: the cancel message
 * (fast, fire-and-forget) and the run record read by each liveness sample (durable).
 */
export class RunCancelWatch {
  constructor(
    private readonly redis: Redis,
    private readonly keys: QueueKeys,
    private readonly processor: RolloutProcessor,
    private readonly logger: Logger,
  ) {}

  /**
   * A cancel message (PUBLISH runId, the whole contract): aborts the run's active rollouts here
   * and is remembered, so an attempt of it starting later ends as Cancelled. It applies to the
   * run's attempt its record names now (`runAttemptId`; every attempt when it has no record): a
   * new run under the same id (after a purge) is not cancelled by an old message (fresh-user
   * report: `run --run-id X` after `cancel X` and `purge X` ended Cancelled at once).
   */
  async onMessage(runId: string): Promise<void> {
    const runAttemptId = await this.redis.hget(this.keys.run(runId), RUN_FIELDS.runAttemptId).catch(() => null);
    const count = this.processor.abort({ runId, runAttemptId }, 'cancelled');
    if (count > 0) this.logger.info({ runId, count }, 'run cancelled; aborting its active rollouts');
    else this.logger.debug({ runId }, 'run cancelled; no active rollout of it here');
  }

  /**
   * The durable path of cancellation: pub/sub (`keys.cancelChannel`) is fire-and-forget, so a
   * message this worker missed (its subscriber reconnecting, a publish racing the subscribe) must
   * not leave a cancelled run's rollouts running to their end. Reads the status of the runs it has
   * active rollouts of (one pipelined round trip) and aborts those of cancelled runs, as the
   * message would have. Rejects with the Redis error (the next liveness sample retries).
   */
  async abortCancelledRuns(): Promise<void> {
    const runIds = [...new Set([...this.processor.active.values()].map((rollout) => rollout.runId))];
    if (runIds.length === 0) return;
    const replies = (await runIds.reduce((pipe, runId) => pipe.hmget(this.keys.run(runId), RUN_FIELDS.status, RUN_FIELDS.runAttemptId), this.redis.pipeline()).exec()) ?? [];
    runIds.forEach((runId, i) => {
      const [status, runAttemptId] = (replies[i]?.[1] as (string | null)[] | undefined) ?? [];
      if (status !== 'cancelled') return;
      const count = this.processor.abort({ runId, runAttemptId: runAttemptId ?? null }, 'cancelled');
      if (count > 0) this.logger.info({ runId, count }, 'run cancelled (seen in its record); aborting its active rollouts');
    });
  }
}
