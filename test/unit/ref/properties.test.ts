// Property-based tests: whatever a caller sends, ref() and resolveRef() either succeed or
// throw a RefError, and never import a module the allowlist refuses; resolveRefJson agrees with resolveRef.
import { isBuiltin } from 'node:module';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Allowlist, REF_ERROR_CODES, RefError, canonicalRefJson, clearRefCache, ref, resolveRef, resolveRefJson, validateRef } from '../../../src/ref/index.js';

afterEach(() => clearRefCache());

const FRAGMENTS = [
  'rollout-queue', 'fixture-pkg', '@acme', 'acme', 'rewards', 'good', 'node:', 'fs', 'child_process', '/', '//', '..', '.', ':',
  ' ', '\\', '\0', '\n', 'file://', 'http://', 'data:', 'a', 'B', '%2e', '-evil', '.evil', '@', '#', '*', '~', '_',
];
const EXPORTS = ['f', 'v', 'throws', 'number', 'nope', 'constructor', '1x', '', 'f:g'];

/** Targets assembled from fragments that hostile and benign specifiers are made of. */
const fragmentTargetArb = fc
  .tuple(fc.array(fc.constantFrom(...FRAGMENTS), { minLength: 0, maxLength: 6 }), fc.constantFrom(...EXPORTS), fc.boolean())
  .map(([parts, exportName, withColon]) => (withColon ? `${parts.join('')}:${exportName}` : parts.join('')));

/** Mostly one of `usual`, sometimes one of `odd`. */
const mostly = (usual: string[], odd: string[]): fc.Arbitrary<string> =>
  fc.oneof({ arbitrary: fc.constantFrom(...usual), weight: 4 }, { arbitrary: fc.constantFrom(...odd), weight: 1 });

/** Targets shaped like `(@scope/)name(/sub)*:export`, each part usually valid, sometimes hostile. */
const structuredTargetArb = fc
  .tuple(
    fc.oneof({ arbitrary: fc.constant(''), weight: 3 }, { arbitrary: mostly(['@acme/', '@evil/'], ['@Acme/', '@/', '@../', '@acme//']), weight: 1 }),
    mostly(['rollout-queue', 'fixture-pkg', 'fixture-pkg', 'x', 'rollout-queue-evil'], ['fs', 'child_process', '..', '.', 'A', '', 'node:fs', 'file:///x', './x']),
    fc.array(mostly(['rewards', 'good', 'good', 'Foo', 'a.js'], ['..', '.', '', 'x y', 'a\\b']), { maxLength: 2 }),
    mostly(['f', 'f', 'f', 'v', 'throws', 'number', 'nope', 'constructor'], ['', '1x', 'f:g', 'f-g']),
  )
  .map(([scope, name, subs, exportName]) => `${scope}${name}${subs.map((sub) => `/${sub}`).join('')}:${exportName}`);

const targetArb = fc.oneof(
  { arbitrary: structuredTargetArb, weight: 5 },
  { arbitrary: fragmentTargetArb, weight: 2 },
  { arbitrary: fc.string({ maxLength: 30 }), weight: 1 },
);

/** Anything JavaScript has, JSON or not. */
const valueArb = fc.oneof(
  fc.anything({
    withBigInt: true,
    withBoxedValues: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withNullPrototype: true,
    withObjectString: true,
    withSparseArray: true,
    withTypedArray: true,
  }),
  fc.constantFrom(() => 1, class X {}, Number.NaN, Number.POSITIVE_INFINITY, undefined, Symbol('s'), JSON.parse('{"__proto__":{"x":1}}') as unknown),
);

const keyArb = fc.oneof({ arbitrary: fc.string({ maxLength: 6 }), weight: 5 }, fc.constantFrom('__proto__', 'constructor', 'prototype', '$ref', 'config'));
const scalarArb = fc.oneof(fc.string({ maxLength: 8 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.boolean(), fc.constant(null));

/** Configs: mostly JSON data with nested Refs, sometimes holding anything at all. */
const configArb = fc.letrec((tie) => ({
  config: fc.dictionary(
    keyArb,
    fc.oneof(
      { depthSize: 'small' },
      { arbitrary: scalarArb, weight: 6 },
      { arbitrary: fc.array(scalarArb, { maxLength: 3 }), weight: 2 },
      { arbitrary: tie('config'), weight: 2 },
      { arbitrary: tie('refLike'), weight: 2 },
      { arbitrary: valueArb, weight: 1 },
    ),
    { maxKeys: 4 },
  ),
  refLike: fc.record(
    { $ref: fc.oneof({ arbitrary: fc.constantFrom('fixture-pkg/good:f', 'rollout-queue/rewards:f', '@acme/x:f'), weight: 3 }, { arbitrary: targetArb, weight: 1 }), config: tie('config'), call: fc.constantFrom(true, false, undefined) },
    { requiredKeys: ['$ref'] },
  ),
})).config as fc.Arbitrary<Record<string, unknown>>;

const NAMESPACE = {
  f: (config: unknown) => () => config,
  v: 1,
  throws: () => {
    throw new Error('factory refused');
  },
  number: () => 5,
};

function recordingImporter() {
  const calls: string[] = [];
  const importer = async (specifier: string): Promise<unknown> => {
    calls.push(specifier);
    return NAMESPACE;
  };
  return { importer, calls };
}

function expectRefError(error: unknown): void {
  if (!(error instanceof RefError)) throw new Error(`expected a RefError, got ${String(error)}`, { cause: error });
  expect(REF_ERROR_CODES).toContain(error.code);
  expect(error.message.startsWith('Ref')).toBe(true);
}

describe('properties', () => {
  it('ref() returns a JSON-stable Ref or throws a RefError', () => {
    fc.assert(
      fc.property(targetArb, configArb, fc.constantFrom(true, false, undefined), (target, config, call) => {
        let built;
        try {
          built = ref(target, config, call === undefined ? {} : { call });
        } catch (error) {
          expectRefError(error);
          return;
        }
        const wire = JSON.parse(JSON.stringify(built)) as unknown;
        expect(wire).toStrictEqual(built);
        expect(validateRef(wire)).toStrictEqual(built);
        expect(canonicalRefJson(validateRef(wire))).toBe(canonicalRefJson(built));
      }),
      { numRuns: 500 },
    );
  });

  it('ref() with a -0 in its config returns it as 0, its JSON form (the counterexample fast-check found: seed 1290641077)', () => {
    const built = ref('@acme/fs:f', { '': -0, nested: { list: [-0, 1] } }, { call: true });
    expect(built.config).toStrictEqual({ '': 0, nested: { list: [0, 1] } });
    expect(JSON.parse(JSON.stringify(built))).toStrictEqual(built);
  });

  it('validateRef() of any value returns a Ref or throws a RefError', () => {
    fc.assert(
      fc.property(fc.oneof(valueArb, configArb, configArb.map((config) => ({ $ref: 'fixture-pkg/good:f', config }))), (value) => {
        try {
          validateRef(value);
        } catch (error) {
          expectRefError(error);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('resolveRef() gives a function or a RefError, and imports only allowed modules', async () => {
    const allowlist = Allowlist.compile(['rollout-queue/*', 'fixture-pkg/*', '@acme/*']);
    await fc.assert(
      fc.asyncProperty(targetArb, configArb, fc.constantFrom(true, false, undefined), async (target, config, call) => {
        const { importer, calls } = recordingImporter();
        const value = call === undefined ? { $ref: target, config } : { $ref: target, config, call };
        let outcome: unknown;
        try {
          outcome = await resolveRef(value, { allow: allowlist, importer });
        } catch (error) {
          expectRefError(error);
        }
        if (outcome !== undefined) expect(typeof outcome).toBe('function');
        for (const specifier of calls) {
          expect(allowlist.check(specifier).allowed).toBe(true);
          expect(isBuiltin(specifier)).toBe(false);
          expect(specifier).not.toMatch(/\.\.|\/\/|^[./]|[\s\\:\0%]/);
        }
        // Nothing is imported unless the whole tree passed the checks before any import.
        let refusedUpFront = false;
        try {
          validateRef(value);
          const module = target.slice(0, target.lastIndexOf(':'));
          refusedUpFront = !allowlist.check(module).allowed;
        } catch {
          refusedUpFront = true;
        }
        if (refusedUpFront) expect(calls).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('resolveRefJson(text) answers as resolveRef(JSON.parse(text)) does, the first time and again', async () => {
    const allowlist = Allowlist.compile(['rollout-queue/*', 'fixture-pkg/*', '@acme/*']);
    const outcome = async (resolving: Promise<unknown>): Promise<string> => {
      try {
        return typeof (await resolving);
      } catch (error) {
        expectRefError(error);
        return `${(error as RefError).code}: ${(error as RefError).message}`;
      }
    };
    await fc.assert(
      fc.asyncProperty(targetArb, configArb, fc.constantFrom(true, false, undefined), async (target, config, call) => {
        let text: string | undefined;
        try {
          text = JSON.stringify(call === undefined ? { $ref: target, config } : { $ref: target, config, call });
        } catch {
          // A BigInt has no JSON text.
        }
        fc.pre(text !== undefined);
        const { importer } = recordingImporter();
        const expected = await outcome(resolveRef(JSON.parse(text as string), { allow: allowlist, importer }));
        clearRefCache();
        for (let i = 0; i < 2; i++) expect(await outcome(resolveRefJson(text as string, { allow: allowlist, importer }))).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('a "pkg/*" pattern never admits a sibling whose name only starts with pkg', () => {
    const name = fc.stringMatching(/^[a-z0-9][a-z0-9._~-]{0,12}$/).filter((n) => !n.includes('..') && !isBuiltin(n));
    fc.assert(
      fc.property(name, fc.stringMatching(/^[a-z0-9._~-]{1,8}$/), fc.stringMatching(/^[a-z0-9._~-]{1,8}$/), (pkg, suffix, sub) => {
        const allowlist = Allowlist.compile([`${pkg}/*`]);
        expect(allowlist.check(`${pkg}${suffix}`).allowed).toBe(false);
        expect(allowlist.check(`${pkg}${suffix}/${sub}`).allowed).toBe(false);
        expect(allowlist.check(pkg).allowed).toBe(true);
        if (!sub.includes('..') && sub !== '.') expect(allowlist.check(`${pkg}/${sub}`).allowed).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('equal Refs in any key order share one cache entry', async () => {
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }).filter((k) => !['__proto__', 'constructor', 'prototype', '$ref'].includes(k)), fc.oneof(fc.integer(), fc.string(), fc.boolean(), fc.constant(null)), { maxKeys: 6 }), async (config) => {
        clearRefCache();
        let built = 0;
        const importer = async (): Promise<unknown> => ({ f: () => { built++; return () => 1; } });
        const reversed = Object.fromEntries(Object.entries(config).reverse());
        const a = await resolveRef({ $ref: 'fixture-pkg/x:f', config }, { allow: ['fixture-pkg/*'], importer });
        const b = await resolveRef({ config: reversed, call: true, $ref: 'fixture-pkg/x:f' }, { allow: ['fixture-pkg/*'], importer });
        expect(b).toBe(a);
        expect(built).toBe(1);
      }),
      { numRuns: 100 },
    );
  });
});
