/**
 * `rollout-queue/dispatch/http`: the HTTP client of the gateway's `POST /dispatch`, for a
 * coordinator with no Redis access (the Python client's counterpart): the harness' `httpDispatch`
 * options and semantics, plus cost replay through the harness meter and idempotent retries.
 * Loads neither Redis, BullMQ nor the producer (checked by dependency-cruiser).
 */
export { httpDispatch, HttpDispatchError, type HttpDispatchOptions } from './http-dispatch.js';
export { FINAL_HEADER, type DispatchResponseBody } from './wire.js';
export type { DispatchContext, DispatchCost, DispatchTrace, DispatchArtifacts } from '../worker/dispatch-types.js';
export type * from '../worker/harness-shapes.js';
