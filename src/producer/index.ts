/**
 * The coordinator side of rollout-queue: enqueue rollout drafts, receive exactly one Result per
 * lease, durably (see docs/design.md "Producer").
 */
export { RolloutQueue } from './rollout-queue.js';
export type { RolloutQueueState } from './rollout-queue.js';
export type { CoordinatorOptions, MapRolloutsOptions } from './coordinator-call-options.js';
export type { QueueStatus } from './queue-status.js';
export type { RunReuse } from './run-reuse.js';
export { ResultDeliveredError, RunStoppedError, stoppedAtText } from './run-stopped-error.js';
export { RunBusyError, CoordinatorLeaseLostError, COORDINATOR_LEASE_MS, LEASE_LOST_WAIT_MS } from './coordinator-lease.js';
export { AbortError } from './abort-error.js';
export { ProducerOptionsSchema, compileProducerOptions, DEFAULT_MAX_SPEC_BYTES, DEFAULT_MAX_TASK_BYTES, MAX_PRODUCER_BYTES } from './producer-options.js';
export type { CompiledProducerOptions, ProducerOptions } from './producer-options.js';
export { DuplicateLeaseError, firstRefusedDraft, refuseRepeatedLeases, type RolloutDraft } from './rollout-draft.js';
export type { CancelOutcome } from './cancel-run.js';
export { connectProducerRedis } from './connect-producer-redis.js';
export { RunActiveError, UndeliveredResultsError, type PurgeOptions } from './purge-run.js';
export { RunNotFoundError } from './run-not-found-error.js';
export type { PurgeOutcome, PurgeOlderOutcome } from './purge-run.js';
export { DEFAULT_RETAIN_MS } from './run-retention.js';
export { STORE_ARTIFACT_MIN_BYTES } from './artifact-storer.js';
export { CoordinatorMetrics } from './coordinator-metrics.js';
export type { PlacementStatus } from './placement-queues.js';
export type { PlacementFor } from './producer-options.js';
export type { RunShareStatus } from './run-shares.js';
export { DEFAULT_RUN_WEIGHT, MIN_RUN_WEIGHT, MAX_RUN_WEIGHT } from './fair-share.js';
export { checkRunWeight } from './fair-share.js';
