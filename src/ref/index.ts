/**
 * Refs on both sides of the queue: `ref()` builds and checks one on the coordinator,
 * `resolveRef()` turns one into its function on the worker, through an `Allowlist`.
 */
export { ref, type RefOptions } from './ref.js';
export { RefError, REF_ERROR_CODES, type RefErrorCode, type RefErrorDetails } from './ref-error.js';
export { Allowlist, DEFAULT_ALLOWLIST, type AllowDecision } from './allowlist.js';
export { AllowlistError } from './allowlist-error.js';
export { checkBareSpecifier, isSpecifierRefusal, MAX_SPECIFIER_LENGTH, type BareSpecifier, type SpecifierRefusal } from './bare-specifier.js';
export { validateRef } from './validate-ref.js';
export { MAX_REF_NESTING } from './snapshot-data.js';
export { canonicalRefJson } from './canonical-ref-json.js';
export { resolveRef, resolveRefJson, type ResolveRefOptions } from './resolve-ref.js';
export { clearRefCache, MAX_CACHED_REFS, type ResolvedFunction } from './ref-cache.js';
export { defaultImporter, type Importer } from './importer.js';
