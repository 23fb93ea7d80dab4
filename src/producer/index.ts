/**
 * The coordinator side of rollout-queue: enqueue rollout drafts, receive exactly one Result per
 * lease, durably (see docs/design.md "Producer").
 */
export { RolloutQueue } from './rollout-queue.js';
export type { MapRolloutsOptions, QueueStatus, RolloutQueueState } from './rollout-queue.js';
export { RunStoppedError } from './run-stopped-error.js';
export { RunBusyError, COORDINATOR_LEASE_MS } from './coordinator-lease.js';
export { AbortError } from './abort-error.js';
export { ProducerOptionsSchema, compileProducerOptions, DEFAULT_MAX_TASK_BYTES } from './producer-options.js';
export type { CompiledProducerOptions, ProducerOptions } from './producer-options.js';
export type { RolloutDraft } from './rollout-draft.js';
export type { CancelOutcome } from './cancel-run.js';
export { CoordinatorMetrics } from './coordinator-metrics.js';
