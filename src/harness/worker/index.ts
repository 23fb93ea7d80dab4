/**
 * Built-in `rollout-queue/dispatch`: the worker half of the harness' Dispatch seam
 * (`dispatchRunner`, `noReward`), the Dispatch and ctx types of both halves, and the harness'
 * own shapes they use. Imports only `../../spec/index.js` and node builtins; the coordinator half
 * (`queueDispatch`) is `../coordinator`, the HTTP half `../http`.
 */
export { dispatchRunner, noReward, DEFAULT_MAX_ARTIFACT_BYTES, MAX_MAX_ARTIFACT_BYTES, type DispatchRunnerOptions } from './dispatch-runner.js';
export type * from './dispatch-types.js';
export type * from './harness-shapes.js';
export type { DispatchSpan } from '../../spec/index.js';
