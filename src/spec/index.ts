/** Wire contract of rollout-queue: zod schemas are the single source of truth. */
export * from './ids.js';
export * from './json-data.js';
export * from './canonical-json.js';
export * from './ref-target.js';
export * from './ref-schema.js';
export * from './rollout-spec.js';
export * from './result.js';
export * from './paid-call-detail.js';
export * from './meta.js';
export * from './cost-summary.js';
export * from './json-schema.js';
export * from './context.js';
export * from './gold-keys.js';
export * from './errors.js';
export * from './dispatch-wire.js';
export * from './redact-secrets.js';
export * from './truncation-marker.js';
