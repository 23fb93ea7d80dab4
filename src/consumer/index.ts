/** Worker side of rollout-queue: a BullMQ worker driving a supervised pool of rollout children. */
export { RolloutWorker, type WorkerState } from './rollout-worker.js';
export { WorkerStartAborted } from './worker-start-aborted.js';
export { compileWorkerOptions, type WorkerOptions, type CompiledWorkerOptions } from './worker-options.js';
export { classifyError, type Classified } from './classify.js';
