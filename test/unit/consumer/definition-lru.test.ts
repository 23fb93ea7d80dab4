import { describe, expect, it } from 'vitest';
import { DefinitionLru, maxDefinitionBytes } from '../../../src/consumer/definition-lru.js';

// The worker and its child each keep this cache and must evict the same keys from the same
// operations, without talking about it: the worker sends a definition only when its copy lacks it.

describe('DefinitionLru', () => {
  it('evicts the least recently used past its count, a hit counting as a use', () => {
    const lru = new DefinitionLru(2, 1000);
    expect(lru.add('a', 1, true)).toEqual([]);
    expect(lru.add('b', 1, true)).toEqual([]);
    expect(lru.has('a')).toBe(true); // a is now the most recent
    expect(lru.add('c', 1, true)).toEqual(['b']);
    expect([lru.peek('a'), lru.peek('b'), lru.peek('c')]).toEqual([true, false, true]);
  });

  it('evicts past its bytes, but keeps a single larger definition alone', () => {
    const lru = new DefinitionLru(10, 100);
    lru.add('a', 60, true);
    expect(lru.add('b', 60, true)).toEqual(['a']);
    expect(lru.add('huge', 500, true)).toEqual(['b']);
    expect(lru.size).toBe(1);
  });

  it('two copies given the same operations in the same order hold the same keys (peek moves nothing)', () => {
    const worker = new DefinitionLru(3, 1000);
    const child = new DefinitionLru<string>(3, 1000);
    const keys = ['k1', 'k2', 'k1', 'k3', 'k4', 'k2', 'k1', 'k5', 'k3', 'k3', 'k6'];
    for (const key of keys) {
      // The worker: a hit is a use; a miss sends the definition (add). The child: define, then run (get).
      worker.peek(key);
      if (!worker.has(key)) {
        worker.add(key, 10, true);
        child.add(key, 10, `value of ${key}`);
      }
      expect(child.get(key)).toBe(`value of ${key}`);
    }
    for (const key of new Set(keys)) expect(worker.peek(key)).toBe(child.peek(key));
  });

  it('keeps a quarter of the child heap limit in bytes', () => {
    expect(maxDefinitionBytes(1024)).toBe(256 * 1024 * 1024);
  });
});
