import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Every rollout child loads child-main's static import graph at boot, before its first rollout,
// and keeps it in its heap. A package in it (zod, semver) costs each child ~200 ms of CPU to
// load and a heap big enough that its first mark-compact falls among its first rollouts
// (measured: 0.36 → 0.30 ms of child CPU per no-op rollout over 100 rollouts per child). One
// `import { x } from '../spec/index.js'` is enough to pull all of zod in.

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src');

/** Static value imports and re-exports of a TS module (`import type` / `export type` load nothing). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'"]*?\s+from\s+)?['"]([^'"]+)['"]/gm)) {
    if (!match[1]) found.push(match[2] as string);
  }
  return found;
}

/** The modules `entry` (a path under src) loads, and the packages they import. */
function childGraph(entry = 'consumer/child-main.ts'): { modules: Set<string>; packages: Map<string, string> } {
  const modules = new Set<string>();
  const packages = new Map<string, string>();
  const stack = [path.join(SRC, entry)];
  while (stack.length > 0) {
    const file = stack.pop() as string;
    if (modules.has(file)) continue;
    modules.add(file);
    for (const specifier of importsOf(file)) {
      if (specifier.startsWith('node:')) continue;
      if (specifier.startsWith('.')) stack.push(path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts')));
      else packages.set(specifier, path.relative(SRC, file));
    }
  }
  return { modules, packages };
}

describe('the rollout child module graph', () => {
  it('imports no package, only node builtins and its own modules', () => {
    const { modules, packages } = childGraph();
    expect(modules.size).toBeGreaterThan(10); // the walk followed the imports
    expect(Object.fromEntries(packages)).toEqual({});
  });

  it('does not load the spec schemas (zod) through an index module', () => {
    const loaded = [...childGraph().modules].map((file) => path.relative(SRC, file));
    expect(loaded).not.toContain(path.join('spec', 'index.ts'));
    expect(loaded).not.toContain(path.join('spec', 'rollout-spec.ts'));
  });

  // A child imports a run's and a reward's module at their first rollout: the built-in ones load
  // no package either (measured: importing both built-in indexes in a fresh process took ~195 ms
  // of CPU and 7.9 MB of heap with zod, ~60 ms and 2.1 MB without; a smaller child is also a
  // cheaper fork for every artifact it spawns).
  for (const entry of ['runners/index.ts', 'rewards/index.ts']) {
    it(`the built-in factories of ${entry} import no package and no spec index`, () => {
      const { modules, packages } = childGraph(entry);
      expect(Object.fromEntries(packages)).toEqual({});
      expect([...modules].map((file) => path.relative(SRC, file))).not.toContain(path.join('spec', 'index.ts'));
    });
  }
});
