import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { readRunCost, readRunRecord, type QueueKeys, type RunRecord } from '../lease/index.js';
import type { CostSummary } from '../spec/index.js';
import { leaseHolder } from './coordinator-lease.js';
import type { PlacementQueues, PlacementStatus } from './placement-queues.js';
import { readRunShares, type RunShareStatus } from './run-shares.js';

/** What `RolloutQueue.status` reports. */
export interface QueueStatus {
  readonly queue: string;
  readonly prefix: string;
  /** BullMQ `getJobCounts()`: jobs per state in the whole queue (all runs). */
  readonly counts: Readonly<Record<string, number>>;
  /** The run record, when a run id was given (null when there is no such run). */
  readonly run: RunRecord | null | undefined;
  /** Redis clients of workers on this queue in this database (BullMQ `getWorkers()`, raw CLIENT LIST fields; see `PlacementQueues.liveWorkers`). */
  readonly workers: readonly Record<string, string>[];
  /** The placement queues of this queue (one per distinct placement and class), with waiting jobs and workers each. */
  readonly placements: readonly PlacementStatus[];
  /** Cost receipts recorded for the run so far (when a run id was given): total USD (`null`: none), units, per label. */
  readonly cost?: CostSummary;
  /**
   * With a run id of an existing run: whether a coordinator holds the run's lease now (it is
   * delivering Results). False for a run whose coordinator is gone (a CLI run interrupted): its
   * Results wait in Redis for `attach` (the CLI's `resume`).
   */
  readonly delivering?: boolean;
  /**
   * While `delivering`: the process that holds the run's coordinator lease, as it recorded itself
   * (pid and `os.hostname()`). A holder killed with SIGKILL stays here until its lease lapses,
   * within `COORDINATOR_LEASE_MS` (6 s).
   */
  readonly coordinator?: { readonly pid: number | null; readonly host: string | null };
  /** Every run with jobs waiting or active on the queue: weight, jobs waiting and active, its share (docs/fair-share.md). */
  readonly shares: readonly RunShareStatus[];
}

/**
 * Reads {@link QueueStatus} of the queue `where` names (and of the run `runId`, already checked, when given):
 * job counts, workers, placement queues and shares in one parallel batch, then the run's cost
 * and coordinator lease holder when the run exists.
 * @throws a Redis error.
 */
export async function readQueueStatus(redis: Redis, queue: Queue, placements: PlacementQueues, keys: QueueKeys, where: { readonly queue: string; readonly prefix: string }, runId: string | undefined): Promise<QueueStatus> {
  const [counts, run, workers, placementStatus, shares] = await Promise.all([
    queue.getJobCounts(),
    runId === undefined ? Promise.resolve(undefined) : readRunRecord(redis, keys, runId).then((r) => r ?? null),
    placements.getWorkers(),
    placements.describe(),
    readRunShares(redis, placements, keys),
  ]);
  const [cost, holder] = run ? await Promise.all([readRunCost(redis, keys, run.runId), redis.get(keys.runCoordinator(run.runId))]) : [undefined, null];
  return {
    queue: where.queue, prefix: where.prefix, counts, run, workers, placements: placementStatus, shares, ...(cost ? { cost } : {}),
    ...(run ? { delivering: holder !== null } : {}), ...(holder !== null ? { coordinator: leaseHolder(holder) } : {}),
  };
}
