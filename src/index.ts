/**
 * rollout-queue: a durable, Redis-backed execution plane for ML rollouts.
 *
 * - Coordinator side: {@link RolloutQueue} (`mapRollouts`, `attach`, `rollout`, `cancel`, `status`).
 * - Worker side: {@link RolloutWorker}.
 * - Building specs: {@link ref} for Refs, the zod wire contract (`RolloutSpecSchema`, `ResultSchema`).
 */
export { RolloutQueue, RunStoppedError, ResultDeliveredError, DuplicateLeaseError, RunBusyError, CoordinatorLeaseLostError, AbortError, RunActiveError, RunNotFoundError, UndeliveredResultsError, type PurgeOptions, type RolloutDraft, type MapRolloutsOptions, type CoordinatorOptions, type ProducerOptions, type QueueStatus, type RunReuse } from './producer/index.js';
export { queueDispatch, DispatchError, dispatchRunId, type QueueDispatch, type QueueDispatchOptions } from './harness/coordinator/index.js';
export type { Dispatch, DispatchContext, DispatchCost, DispatchCostReceipt, DispatchTrace, DispatchArtifacts, DispatchSpan, DispatchPlacement } from './harness/worker/index.js';
export { startGateway, type Gateway, type GatewayOptions } from './gateway/index.js';
export { RolloutWorker, WorkerStartAborted, type WorkerOptions } from './consumer/index.js';
export { RefError, Allowlist, DEFAULT_ALLOWLIST, type RefOptions } from './ref/index.js';
export { ref, type BuiltinRefConfigs, type BuiltinRefTarget, type RefArgs, type RefConfig } from './typed-ref.js';
export { leaseIdFor } from './lease/index.js';
export * from './spec/index.js';
