/**
 * Built-in `rollout-queue/dispatch`: the worker side of the harness' Dispatch seam
 * (`dispatchRunner`, `noReward`) and the Dispatch types. Imports only `../spec/index.js`
 * and node builtins; the coordinator side (`queueDispatch`) lives in the producer.
 */
export { dispatchRunner, noReward, DEFAULT_MAX_ARTIFACT_BYTES, MAX_MAX_ARTIFACT_BYTES, type DispatchRunnerOptions } from './dispatch-runner.js';
export type * from './dispatch-types.js';
