import type { Importer } from './importer.js';

/** Most resolved Refs kept per importer; the least recently used is dropped past it. */
export const MAX_CACHED_REFS = 256;

/** A resolved Ref's function. */
export type ResolvedFunction = (...args: any[]) => unknown;

let caches = new WeakMap<Importer, Map<string, Promise<ResolvedFunction>>>();

/**
 * The per-process cache of resolved Refs, so a model client is built once per process,
 * not per rollout. Keyed by importer (identity), then by `key` (the Ref's canonical JSON
 * plus the allowlist). Concurrent calls with the same key share one promise; a rejected
 * promise is dropped, so a failed resolve is retried next time. At most
 * {@link MAX_CACHED_REFS} entries per importer (least recently used dropped first).
 */
export function cachedResolve(importer: Importer, key: string, build: () => Promise<ResolvedFunction>): Promise<ResolvedFunction> {
  let cache = caches.get(importer);
  if (!cache) {
    cache = new Map();
    caches.set(importer, cache);
  }
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key); // re-insert: Map order is the recency order
    cache.set(key, hit);
    return hit;
  }
  const owner = cache;
  const promise = build();
  owner.set(key, promise);
  promise.catch(() => {
    if (owner.get(key) === promise) owner.delete(key);
  });
  while (owner.size > MAX_CACHED_REFS) {
    const oldest = owner.keys().next().value as string;
    owner.delete(oldest);
  }
  return promise;
}

/** Forgets every resolved Ref of this process (for tests; the next resolve imports and builds again). */
export function clearRefCache(): void {
  caches = new WeakMap();
}
