/**
 * The coordinator half of the harness seam: `queueDispatch`, the harness' `Dispatch` over the
 * durable queue (each call one lease of a one-spec run). Sits above the producer, whose
 * `RolloutQueue` it drives; never imports the consumer.
 */
export { queueDispatch, type QueueDispatch } from './queue-dispatch.js';
export { DispatchError } from './dispatch-errors.js';
export { dispatchRunId } from './dispatch-run-id.js';
export { QueueDispatchOptionsSchema, DEFAULT_KEEP_ANSWER_MS, type QueueDispatchOptions } from './dispatch-options.js';
export type { FinalAnswer } from './dispatch-errors.js';
export { WIRE_SINK, type WireSink } from './dispatch-delivery.js';
