import { describe, expect, it } from 'vitest';
import { CallerError, RefSchema, brandedKind } from '../../../src/spec/index.js';
import { MAX_REF_NESTING, RefError, ref, validateRef, type RefErrorCode } from '../../../src/ref/index.js';

/** Runs `fn`, expects a RefError, returns it. */
function refErrorOf(fn: () => unknown): RefError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(RefError);
    return error as RefError;
  }
  throw new Error('expected a RefError, nothing was thrown');
}

function nestRefs(levels: number): Record<string, unknown> {
  let inner: Record<string, unknown> = { $ref: 'rollout-queue/rewards:exactMatch', config: {} };
  for (let i = 1; i < levels; i++) inner = { $ref: 'rollout-queue/rewards:wrap', config: { inner } };
  return inner;
}

describe('ref()', () => {
  it('builds a Ref that survives a JSON round trip unchanged', () => {
    const judge = ref('@acme/judges:llmJudge', { model: 'small', temperature: 0.2, tags: ['a', 1, true, null] });
    const r = ref('rollout-queue/rewards:lastNumber', { goldKey: 'answer', judge, nested: { deep: { n: -1.5e-3 } } });
    expect(r).toEqual({
      $ref: 'rollout-queue/rewards:lastNumber',
      config: { goldKey: 'answer', judge: { $ref: '@acme/judges:llmJudge', config: { model: 'small', temperature: 0.2, tags: ['a', 1, true, null] } }, nested: { deep: { n: -1.5e-3 } } },
    });
    expect(JSON.parse(JSON.stringify(r))).toStrictEqual(r);
    expect(RefSchema.parse(JSON.parse(JSON.stringify(r)))).toStrictEqual(r);
  });

  it('defaults config to {} and adds call only when given', () => {
    expect(ref('rollout-queue/rewards:exactMatch')).toStrictEqual({ $ref: 'rollout-queue/rewards:exactMatch', config: {} });
    expect(ref('pkg:fn', {}, { call: false })).toStrictEqual({ $ref: 'pkg:fn', config: {}, call: false });
    expect(ref('pkg:fn', {}, { call: true })).toStrictEqual({ $ref: 'pkg:fn', config: {}, call: true });
    expect('call' in ref('pkg:fn', {}, {})).toBe(false);
  });

  it('drops nested call/config given as undefined, so the JSON round trip holds', () => {
    const r = ref('pkg:outer', { judge: { $ref: 'pkg:judge', call: undefined, config: undefined } });
    expect(r.config.judge).toStrictEqual({ $ref: 'pkg:judge' });
    expect(JSON.parse(JSON.stringify(r))).toStrictEqual(r);
  });

  it('quotes the target in messages, so it cannot forge log lines', () => {
    const error = refErrorOf(() => ref('pkg\nINFO forged line:fn'));
    expect(error.message).toContain('Ref "pkg\\nINFO forged line:fn"');
    expect(error.message).not.toContain('\n');
    const noColon = refErrorOf(() => ref('evil\nINFO forged line'));
    expect(noColon.message).not.toContain('\n');
    const long = refErrorOf(() => ref('a'.repeat(100_000)));
    expect(long.code).toBe('malformed-target');
    expect(long.message.length).toBeLessThan(2000);
    const thrower = refErrorOf(() => ref('pkg:f', { ['k\ney']: Number.NaN }));
    expect(thrower.message).not.toContain('\n');
  });

  it('returns a detached, deep-frozen copy', () => {
    const config = { model: { name: 'a' } };
    const r = ref('pkg:fn', config);
    config.model.name = 'changed';
    expect(r.config).toEqual({ model: { name: 'a' } });
    expect(Object.isFrozen(r)).toBe(true);
    expect(Object.isFrozen(r.config.model)).toBe(true);
  });

  it('a RefError is a CallerError, branded caller', () => {
    const error = refErrorOf(() => ref('no-colon'));
    expect(error).toBeInstanceOf(CallerError);
    expect(brandedKind(error)).toBe('caller');
    expect(error.name).toBe('RefError');
  });

  describe('malformed-target', () => {
    it.each([
      ['no-colon'],
      [':fn'],
      ['pkg:'],
      ['pkg:not-an-identifier'],
      [''],
    ])('%j says the form is module:export', (target) => {
      const error = refErrorOf(() => ref(target));
      expect(error.code).toBe<RefErrorCode>('malformed-target');
      expect(error.message).toContain('"module:export"');
      expect(error.message).toContain(`Ref "${target}"`);
      expect(error.message).toContain('rollout-queue/rewards:lastNumber'); // the example in the fix
    });

    it('a target that is not a string', () => {
      const error = refErrorOf(() => ref(42 as unknown as string));
      expect(error.code).toBe('malformed-target');
      expect(error.message).toMatch(/must be a string of the form "module:export", got number/);
    });

    it('a module that is not a bare specifier', () => {
      const error = refErrorOf(() => ref('rollout-queue//x:fn'));
      expect(error.code).toBe('malformed-target');
      expect(error.message).toContain('Ref "rollout-queue//x:fn"');
      expect(error.message).toContain('empty path segment');
    });

    it('a nested Ref with a malformed target names its path', () => {
      const error = refErrorOf(() => ref('pkg:outer', { judge: { $ref: 'nocolon' } }));
      expect(error.code).toBe('malformed-target');
      expect(error.path).toBe('config.judge');
      expect(error.target).toBe('nocolon');
      expect(error.message).toContain('Ref "nocolon" at config.judge: $ref "nocolon" is not of the form "module:export"');
    });
  });

  describe('not-allowed whatever the allowlist', () => {
    it.each([
      ['node:fs:readFileSync', /builtin/],
      ['fs:readFileSync', /builtin/],
      ['child_process:exec', /builtin/],
      ['./x:y', /path/],
      ['/etc/passwd:x', /path/],
      ['file:///tmp/x.mjs:y', /URL/],
    ])('%j', (target, reason) => {
      const error = refErrorOf(() => ref(target));
      expect(error.code).toBe('not-allowed');
      expect(error.message).toMatch(reason);
      expect(error.message).toContain(`Ref "${target}"`);
      expect(error.message).toContain('installed package'); // the fix
    });

    it('also inside a nested Ref, naming its path', () => {
      const error = refErrorOf(() => ref('rollout-queue/rewards:x', { a: { b: ref('rollout-queue:ok', {}) , c: { $ref: 'node:child_process:exec' } } }));
      expect(error.code).toBe('not-allowed');
      expect(error.path).toBe('config.a.c');
      expect(error.target).toBe('node:child_process:exec');
    });
  });

  describe('bad-config names the path of the bad value', () => {
    class Model {
      name = 'm';
    }
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      ['a function', { model: { make: () => 1 } }, 'config.model.make', /function/],
      ['a class instance', { model: new Model() }, 'config.model', /instance of Model/],
      ['a Date', { when: new Date(0) }, 'config.when', /instance of Date/],
      ['a Map', { m: new Map() }, 'config.m', /instance of Map/],
      ['undefined', { model: { temperature: undefined } }, 'config.model.temperature', /undefined/],
      ['NaN', { model: { temperature: Number.NaN } }, 'config.model.temperature', /NaN/],
      ['Infinity', { limit: Number.POSITIVE_INFINITY }, 'config.limit', /Infinity/],
      ['-Infinity', { limit: Number.NEGATIVE_INFINITY }, 'config.limit', /Infinity/],
      ['a bigint', { n: 1n }, 'config.n', /bigint/],
      ['a symbol value', { s: Symbol('x') }, 'config.s', /symbol/],
      ['an array holding an object', { list: [1, { a: 1 }] }, 'config.list[1]', /inside an array/],
      ['an array holding an array', { list: [[1]] }, 'config.list[0]', /inside an array/],
      ['an array holding a Ref', { list: [{ $ref: 'pkg:f' }] }, 'config.list[0]', /inside an array/],
      ['a "__proto__" key', JSON.parse('{"a":{"__proto__":{"polluted":true}}}') as Record<string, unknown>, 'config.a.__proto__', /__proto__/],
      ['a "constructor" key', { constructor: 'x' }, 'config.constructor', /constructor/],
      ['a "prototype" key', { x: { prototype: {} } }, 'config.x.prototype', /prototype/],
      ['a getter', Object.defineProperty({}, 'secret', { get: () => 'v', enumerable: true }), 'config.secret', /getter/],
      ['a non-enumerable key', Object.defineProperty({}, 'hidden', { value: 1, enumerable: false }), 'config.hidden', /non-enumerable/],
      ['a sparse array', { list: [1, , 3] }, 'config.list[1]', /hole/],
      ['a bad value in a nested Ref', { judge: { $ref: 'pkg:judge', config: { t: Number.NaN } } }, 'config.judge.config.t', /NaN/],
      ['an unknown field in a nested Ref', { judge: { $ref: 'pkg:judge', extra: 1 } }, 'config.judge.extra', /unknown Ref field/],
      ['a nested Ref with config null', { judge: { $ref: 'pkg:judge', config: null } }, 'config.judge.config', /null/],
      ['a nested Ref with call not a boolean', { judge: { $ref: 'pkg:judge', call: 'no' } }, 'config.judge.call', /boolean/],
    ];
    it.each(cases)('%s', (_label, config, path, what) => {
      const error = refErrorOf(() => ref('rollout-queue/rewards:lastNumber', config));
      expect(error.code).toBe<RefErrorCode>('bad-config');
      expect(error.path).toBe(path);
      expect(error.message).toContain(`Ref "rollout-queue/rewards:lastNumber" at ${path}:`);
      expect(error.message).toMatch(what);
      expect(error.message).toContain('plain JSON data'); // the fix
    });

    it('a symbol key', () => {
      const error = refErrorOf(() => ref('pkg:f', { inner: { [Symbol('k')]: 1 } }));
      expect(error.code).toBe('bad-config');
      expect(error.path).toBe('config.inner');
      expect(error.message).toMatch(/symbol key/);
    });

    it('a cycle', () => {
      const loop: Record<string, unknown> = { a: 1 };
      loop.self = loop;
      const error = refErrorOf(() => ref('pkg:f', { loop }));
      expect(error.code).toBe('bad-config');
      expect(error.path).toBe('config.loop.self');
      expect(error.message).toMatch(/cycle/);
    });

    it('a proxy whose traps throw', () => {
      const hostile = new Proxy({}, { ownKeys: () => { throw new Error('trap!'); } });
      const error = refErrorOf(() => ref('pkg:f', { hostile }));
      expect(error.code).toBe('bad-config');
      expect(error.path).toBe('config.hostile');
      expect(error.message).toContain('trap!');
    });

    it('a getter that changes its answer is read once (refused, never half-used)', () => {
      let reads = 0;
      const config = Object.defineProperty({}, 'n', { get: () => (++reads === 1 ? 1 : Number.NaN), enumerable: true });
      expect(refErrorOf(() => ref('pkg:f', config)).code).toBe('bad-config');
      expect(reads).toBe(0);
    });

    it('config that is not an object', () => {
      for (const config of [null, [1, 2], 'str', new Date(0)]) {
        const error = refErrorOf(() => ref('pkg:f', config as unknown as Record<string, unknown>));
        expect(error.code).toBe('bad-config');
        expect(error.path).toBe('config');
      }
    });

    it('call: false with a config that would be ignored', () => {
      const error = refErrorOf(() => ref('pkg:fn', { factor: 2 }, { call: false }));
      expect(error.code).toBe('bad-config');
      expect(error.message).toContain('keys: factor');
      expect(error.message).toMatch(/drop "call": false/);
    });

    it('an unknown field on the Ref itself', () => {
      const error = refErrorOf(() => validateRef({ $ref: 'pkg:f', config: {}, cfg: {} }));
      expect(error.code).toBe('bad-config');
      expect(error.path).toBe('cfg');
    });

    it('a Ref that is not an object', () => {
      for (const value of [null, 'pkg:f', [], 3]) {
        const error = refErrorOf(() => validateRef(value));
        expect(error.code).toBe('bad-config');
        expect(error.message).toContain('"$ref": "module:export"');
      }
    });
  });

  describe('too-deep', () => {
    it(`accepts ${MAX_REF_NESTING} nested Refs and refuses ${MAX_REF_NESTING + 1}`, () => {
      expect(() => validateRef(nestRefs(MAX_REF_NESTING))).not.toThrow();
      const error = refErrorOf(() => validateRef(nestRefs(MAX_REF_NESTING + 1)));
      expect(error.code).toBe<RefErrorCode>('too-deep');
      expect(error.message).toContain(`more than ${MAX_REF_NESTING} deep`);
      expect(error.message).toMatch(/Flatten/);
      expect(error.path).toBe(`${'config.inner.'.repeat(MAX_REF_NESTING).slice(0, -1)}`);
    });

    it('refuses config data nested deeper than the spec limit', () => {
      let deep: Record<string, unknown> = { leaf: 1 };
      for (let i = 0; i < 40; i++) deep = { d: deep };
      const error = refErrorOf(() => ref('pkg:f', deep));
      expect(error.code).toBe('too-deep');
      expect(error.message).toMatch(/nesting deeper than 32 levels/);
    });
  });
});
