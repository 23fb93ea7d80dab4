/** Lease ids, the Redis key layout, and the run record shared by producer and consumer. */
export * from './keys.js';
export * from './lease-id.js';
export * from './run-record.js';
export * from './cluster-slot.js';
export * from './placement.js';
export * from './read-run-cost.js';
