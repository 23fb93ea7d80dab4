import type { Ref } from '../spec/index.js';
import type { Importer } from './importer.js';

/** Most resolved Refs kept per importer, and most checked Ref texts kept; the least recently used is dropped past it. */
export const MAX_CACHED_REFS = 256;

/** A resolved Ref's function. */
export type ResolvedFunction = (...args: any[]) => unknown;

/** A Ref that passed `validateRef` and an allowlist, with its key in the resolved cache. */
export interface CheckedRef {
  readonly ref: Ref;
  readonly key: string;
}

/**
 * A cached value with the tick of its last use. Recency is a number on the entry, not the Map's
 * order: moving a hit to the end (delete, set) on every rollout stored that rollout's fresh key
 * string in the long-lived Map, so each one outlived young-generation collections.
 */
interface Entry<V> {
  readonly value: V;
  used: number;
}

let caches = new WeakMap<Importer, Map<string, Entry<Promise<ResolvedFunction>>>>();
let checked = new Map<string, Entry<CheckedRef>>();
/** Counts uses of either cache, for {@link Entry.used}. */
let tick = 0;

/** `map.get(key)`'s value, made the most recently used entry. */
function recall<V>(map: Map<string, Entry<V>>, key: string): V | undefined {
  const entry = map.get(key);
  if (entry === undefined) return undefined;
  entry.used = ++tick;
  return entry.value;
}

/** Sets `key`, dropping the least recently used entry once there are more than {@link MAX_CACHED_REFS}. */
function remember<V>(map: Map<string, Entry<V>>, key: string, value: V): void {
  map.set(key, { value, used: ++tick });
  if (map.size <= MAX_CACHED_REFS) return;
  let oldest: string | undefined;
  let oldestUse = Infinity;
  for (const [candidate, entry] of map) {
    if (entry.used < oldestUse) {
      oldest = candidate;
      oldestUse = entry.used;
    }
  }
  if (oldest !== undefined) map.delete(oldest);
}

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
  const hit = recall(cache, key);
  if (hit) return hit;
  const owner = cache;
  const promise = build();
  remember(owner, key, promise);
  promise.catch(() => {
    if (owner.get(key)?.value === promise) owner.delete(key);
  });
  return promise;
}

/**
 * The Ref checked before under `textKey` (a Ref's JSON text with the allowlist it passed),
 * or undefined. Only checks that passed are remembered, so a refused text is checked (and
 * refused) again every time.
 */
export function checkedRef(textKey: string): CheckedRef | undefined {
  return recall(checked, textKey);
}

/** Remembers a passed check for {@link checkedRef}; at most {@link MAX_CACHED_REFS} (least recently used dropped first). */
export function rememberCheckedRef(textKey: string, entry: CheckedRef): void {
  remember(checked, textKey, entry);
}

/** Forgets every resolved and checked Ref of this process (for tests; the next resolve checks, imports and builds again). */
export function clearRefCache(): void {
  caches = new WeakMap();
  checked = new Map();
}
