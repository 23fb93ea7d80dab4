/**
 * The bounded cache of run definitions a rollout child holds, kept twice: by the child (with the
 * values) and by the worker (keys only, one per child), to know what it must send. Both sides
 * apply the same operations in the same order (IPC keeps it: the worker applies each at send
 * time, the child at receipt), so they evict the same keys without ever talking about it:
 * - `has(key)` on a run: a hit also makes the key the most recently used;
 * - `add(key, bytes)` on a define: the key becomes the most recent, and the least recently used
 *   ones go while more than {@link DefinitionLru.maxEntries} keys or more than `maxBytes` are kept
 *   (never the key just added).
 */
export class DefinitionLru<V = true> {
  /** Keys in use order, least recent first, with their size and value. */
  private readonly entries = new Map<string, { readonly bytes: number; readonly value: V }>();
  private bytes = 0;

  /**
   * @param maxEntries most definitions kept.
   * @param maxBytes most bytes kept (a single larger definition is still kept, alone).
   */
  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
  ) {}

  /** The value under `key` (made the most recent), or undefined. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** True when `key` is kept; nothing moves (the other side does not see it). */
  peek(key: string): boolean {
    return this.entries.has(key);
  }

  /** True when `key` is kept (made the most recent). */
  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Keeps `value` under `key` as the most recent; returns the keys evicted for it. */
  add(key: string, bytes: number, value: V): string[] {
    const old = this.entries.get(key);
    if (old) {
      this.bytes -= old.bytes;
      this.entries.delete(key);
    }
    this.entries.set(key, { bytes, value });
    this.bytes += bytes;
    const evicted: string[] = [];
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.bytes <= this.maxBytes) break;
      if (oldest === key) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
      evicted.push(oldest);
    }
    return evicted;
  }

  /** Number of definitions kept. */
  get size(): number {
    return this.entries.size;
  }
}

/** Most definitions a child keeps. */
export const MAX_DEFINITIONS = 64;

/**
 * Most bytes of definitions a child keeps: a quarter of its heap limit, so a few large artifacts
 * never crowd out the rollouts that use them (`sandbox.memoryMb` is the child's heap limit).
 */
export function maxDefinitionBytes(memoryMb: number): number {
  return Math.floor((memoryMb * 1024 * 1024) / 4);
}
