import { afterEach, describe, expect, it } from 'vitest';
import { InfrastructureError, brandedKind } from '../../../src/spec/index.js';
import { Allowlist, AllowlistError, RefError, clearRefCache, ref, resolveRef, resolveRefJson, type RefErrorCode } from '../../../src/ref/index.js';
import { fixtureImporter } from './fixture-importer.js';

const allow = ['fixture-pkg/*'];

async function refErrorOf(promise: Promise<unknown>): Promise<RefError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(RefError);
    return error as RefError;
  }
  throw new Error('expected a RefError, the promise resolved');
}

afterEach(() => clearRefCache());

describe('resolveRef: real fixture modules', () => {
  it('calls the factory with its config and returns its function', async () => {
    const importer = fixtureImporter({ 'fixture-pkg/good': 'good.mjs' });
    const fn = await resolveRef(ref('fixture-pkg/good:linear', { factor: 3, offset: 1 }), { allow, importer });
    expect(fn(2)).toBe(7);
    expect(importer.calls).toEqual(['fixture-pkg/good']);
  });

  it('call: false returns the export itself', async () => {
    const importer = fixtureImporter({ 'fixture-pkg/good': 'good.mjs' });
    const good = await import('../../fixtures/ref/good.mjs');
    const fn = await resolveRef(ref('fixture-pkg/good:double', {}, { call: false }), { allow, importer });
    expect(fn).toBe(good.double);
  });

  it('accepts a compiled Allowlist and resolves an installed package with the default importer', async () => {
    const { z } = await import('zod');
    const fn = await resolveRef({ $ref: 'zod:string', call: false }, { allow: Allowlist.compile(['zod']) });
    expect(fn).toBe(z.string);
  });

  it('refuses a malformed allowlist pattern', async () => {
    await expect(resolveRef(ref('fixture-pkg/good:linear'), { allow: ['*'] })).rejects.toBeInstanceOf(AllowlistError);
  });
});

describe('resolveRef: every RefError code', () => {
  const importer = () =>
    fixtureImporter({
      'fixture-pkg/good': 'good.mjs',
      'fixture-pkg/broken': 'broken.mjs',
      'fixture-pkg/many': Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`export${String(i).padStart(2, '0')}`, () => () => i])),
      'fixture-pkg/empty': {},
      'fixture-pkg/odd': {
        returnsNumber: () => 7,
        returnsPromiseOfNumber: async () => 7,
        asyncFactory: async (config: { n: number }) => () => config.n,
        rejects: async () => { throw new Error('async refusal'); },
        throwsString: () => { throw 'plain string'; },
        throwsInfra: () => { throw new InfrastructureError('secret OPENAI_API_KEY is not set on this worker'); },
        LinearFactory: () => () => 0,
        klass: class Client {},
      },
    });

  it('malformed-target: the form is module:export', async () => {
    const imp = importer();
    const error = await refErrorOf(resolveRef({ $ref: 'fixture-pkg/good' }, { allow, importer: imp }));
    expect(error.code).toBe<RefErrorCode>('malformed-target');
    expect(error.message).toContain('Ref "fixture-pkg/good"');
    expect(error.message).toContain('"module:export"');
    expect(imp.calls).toEqual([]);
  });

  it('not-allowed: names the target, the allowlist, and the fix', async () => {
    const imp = importer();
    const error = await refErrorOf(resolveRef(ref('other-pkg/x:linear'), { allow, importer: imp }));
    expect(error.code).toBe<RefErrorCode>('not-allowed');
    expect(error.message).toContain('Ref "other-pkg/x:linear"');
    expect(error.message).toContain('"fixture-pkg/*"');
    expect(error.message).toMatch(/widen the worker's allowlist explicitly/);
    expect(error.message).toMatch(/on every worker that serves the queue: any of them may take the lease \(give a worker with another allowlist a queue or placement labels of its own\)/);
    // The fix names the refused module's own package, not a placeholder (fresh-user report: 'e.g. add "pkg/*"').
    expect(error.message).toContain('worker --allow "other-pkg/*", library option allow: ["other-pkg/*"]');
    expect(imp.calls).toEqual([]);
  });

  it('not-allowed: a scoped package is named with its scope', async () => {
    const error = await refErrorOf(resolveRef(ref('@acme/solvers/x:linear'), { allow, importer: importer() }));
    expect(error.message).toContain('worker --allow "@acme/solvers/*"');
  });

  it('cannot-import (not installed): says the worker resolves against its own installed code', async () => {
    const imp = importer();
    const error = await refErrorOf(resolveRef(ref('fixture-pkg/missing:linear'), { allow, importer: imp }));
    expect(error.code).toBe<RefErrorCode>('cannot-import');
    expect(error.message).toContain('Ref "fixture-pkg/missing:linear"');
    expect(error.message).toContain('ERR_MODULE_NOT_FOUND');
    expect(error.message).toContain('The worker resolves the module against its own installed code');
    expect(error.message).toContain('Install the package on the worker (npm install fixture-pkg in the project the worker runs from)');
    expect(error.message).toContain(`next to its rollout-queue install, then from its working directory (${process.cwd()})`);
    expect((error.cause as { code?: string }).code).toBe('ERR_MODULE_NOT_FOUND');
  });

  it('cannot-import names the export the Ref wants, not the module, as what the install must export (fresh-user report: my-rewards:score)', async () => {
    const error = await refErrorOf(resolveRef(ref('my-rewards:score'), { allow: ['my-rewards/*'] }));
    expect(error.code).toBe('cannot-import');
    expect(error.message).toContain('(npm install my-rewards in the project the worker runs from) in a version that exports "score"');
    expect(error.message).not.toContain('exports "my-rewards"');
  });

  it('cannot-import with the real import() of a package that is not installed', async () => {
    const error = await refErrorOf(resolveRef(ref('@rq-not-installed/nothing:x'), { allow: ['@rq-not-installed/*'] }));
    expect(error.code).toBe('cannot-import');
    expect(error.message).toContain('"@rq-not-installed/nothing"');
    expect(error.message).toContain('npm install @rq-not-installed/nothing');
  });

  it('cannot-import (top level threw while loading)', async () => {
    const error = await refErrorOf(resolveRef(ref('fixture-pkg/broken:x'), { allow, importer: importer() }));
    expect(error.code).toBe('cannot-import');
    expect(error.message).toContain('broken fixture: failed at load time');
    expect(error.message).toContain('own installed code');
  });

  it('no-such-export: lists a few available exports', async () => {
    const error = await refErrorOf(resolveRef(ref('fixture-pkg/good:linearr'), { allow, importer: importer() }));
    expect(error.code).toBe<RefErrorCode>('no-such-export');
    expect(error.message).toContain('Ref "fixture-pkg/good:linearr"');
    expect(error.message).toContain('has no export "linearr"');
    expect(error.message).toContain('it exports: answer, double, linear, strict');
    expect(error.message).toMatch(/Use one of its exports/);
  });

  it('no-such-export: caps the list, puts a case-insensitive match first', async () => {
    const many = await refErrorOf(resolveRef(ref('fixture-pkg/many:nope'), { allow, importer: importer() }));
    expect(many.message).toContain('export00, export01');
    expect(many.message).toContain('and 4 more');
    expect(many.message).not.toContain('export13');
    const cased = await refErrorOf(resolveRef(ref('fixture-pkg/odd:linearFactory'), { allow, importer: importer() }));
    expect(cased.message).toContain('it exports: LinearFactory,');
    const empty = await refErrorOf(resolveRef(ref('fixture-pkg/empty:x'), { allow, importer: importer() }));
    expect(empty.message).toContain('it has no exports at all');
  });

  it('no-such-export: never reaches the prototype chain', async () => {
    for (const name of ['toString', 'constructor', 'hasOwnProperty', 'valueOf']) {
      const error = await refErrorOf(resolveRef(ref(`fixture-pkg/odd:${name}`), { allow, importer: importer() }));
      expect(error.code).toBe('no-such-export');
    }
  });

  it('not-callable with call: false', async () => {
    const error = await refErrorOf(resolveRef(ref('fixture-pkg/good:answer', {}, { call: false }), { allow, importer: importer() }));
    expect(error.code).toBe<RefErrorCode>('not-callable');
    expect(error.message).toContain('export "answer" of module "fixture-pkg/good" is a number, not a function');
    expect(error.message).toContain('With "call": false the export itself must be the function');
  });

  it('not-callable: the export is not a factory', async () => {
    const error = await refErrorOf(resolveRef(ref('fixture-pkg/good:answer'), { allow, importer: importer() }));
    expect(error.code).toBe('not-callable');
    expect(error.message).toMatch(/must be a factory function/);
  });

  it('not-callable: the factory returned something else, naming it', async () => {
    for (const name of ['returnsNumber', 'returnsPromiseOfNumber']) {
      const error = await refErrorOf(resolveRef(ref(`fixture-pkg/odd:${name}`), { allow, importer: importer() }));
      expect(error.code).toBe('not-callable');
      expect(error.message).toContain(`factory export "${name}" of module "fixture-pkg/odd" returned a number, not a function`);
      expect(error.message).toContain('set "call": false');
    }
  });

  it('factory-threw: names the config keys, not the values, and the factory message', async () => {
    const error = await refErrorOf(resolveRef(ref('fixture-pkg/good:strict', { temperature: 7.5, apiBase: 'https://secret.example' }), { allow, importer: importer() }));
    expect(error.code).toBe<RefErrorCode>('factory-threw');
    expect(error.message).toContain('Ref "fixture-pkg/good:strict"');
    expect(error.message).toContain('keys: temperature, apiBase');
    expect(error.message).toContain('RangeError: temperature must be a number at most 2');
    expect(error.message).not.toContain('7.5');
    expect(error.message).not.toContain('secret.example');
    expect(error.cause).toBeInstanceOf(RangeError);
  });

  it('factory-threw: async rejections, thrown strings, classes called without new', async () => {
    const rejects = await refErrorOf(resolveRef(ref('fixture-pkg/odd:rejects'), { allow, importer: importer() }));
    expect(rejects.code).toBe('factory-threw');
    expect(rejects.message).toContain('(empty config): Error: async refusal');
    const str = await refErrorOf(resolveRef(ref('fixture-pkg/odd:throwsString'), { allow, importer: importer() }));
    expect(str.message).toContain('plain string');
    const klass = await refErrorOf(resolveRef(ref('fixture-pkg/odd:klass'), { allow, importer: importer() }));
    expect(klass.code).toBe('factory-threw');
  });

  it('an async factory is awaited', async () => {
    const fn = await resolveRef(ref('fixture-pkg/odd:asyncFactory', { n: 5 }), { allow, importer: importer() });
    expect(fn()).toBe(5);
  });

  it('a factory that throws an infrastructure error keeps its kind', async () => {
    const promise = resolveRef(ref('fixture-pkg/odd:throwsInfra'), { allow, importer: importer() });
    await expect(promise).rejects.toBeInstanceOf(InfrastructureError);
    await promise.catch((error: unknown) => expect(brandedKind(error)).toBe('infrastructure'));
  });

  it('bad-config and too-deep are refused before any import', async () => {
    const imp = importer();
    const bad = await refErrorOf(resolveRef({ $ref: 'fixture-pkg/good:linear', config: { f: () => 1 } }, { allow, importer: imp }));
    expect(bad.code).toBe('bad-config');
    expect(bad.path).toBe('config.f');
    let deep: Record<string, unknown> = { $ref: 'fixture-pkg/good:linear' };
    for (let i = 0; i < 9; i++) deep = { $ref: 'fixture-pkg/good:linear', config: { inner: deep } };
    const tooDeep = await refErrorOf(resolveRef(deep, { allow, importer: imp }));
    expect(tooDeep.code).toBe('too-deep');
    expect(imp.calls).toEqual([]);
  });

  it('resolves a Ref that arrived as JSON', async () => {
    const wire = JSON.parse(JSON.stringify(ref('fixture-pkg/good:linear', { factor: 2 }))) as unknown;
    const fn = await resolveRef(wire, { allow, importer: importer() });
    expect(fn(4)).toBe(8);
    const polluted = JSON.parse('{"$ref":"fixture-pkg/good:linear","config":{"__proto__":{"factor":100}}}') as unknown;
    const error = await refErrorOf(resolveRef(polluted, { allow, importer: importer() }));
    expect(error.code).toBe('bad-config');
    expect(error.path).toBe('config.__proto__');
  });
});

describe('resolveRef: nested Refs', () => {
  function recordingModule(order: string[], built: Map<string, unknown>) {
    const named = (config: { name: string; [key: string]: unknown }) => {
      order.push(config.name);
      const fn = (x: number): number => {
        let out = x;
        for (const value of Object.values(config)) if (typeof value === 'function') out = (value as (n: number) => number)(out);
        return out + config.name.length;
      };
      built.set(config.name, fn);
      return fn;
    };
    return { named };
  }

  it('resolves innermost first and passes the functions in the config', async () => {
    const order: string[] = [];
    const built = new Map<string, unknown>();
    const imp = fixtureImporter({ 'fixture-pkg/rec': recordingModule(order, built) });
    const leaf = ref('fixture-pkg/rec:named', { name: 'leaf' });
    const mid = ref('fixture-pkg/rec:named', { name: 'middle', inner: leaf });
    const outer = ref('fixture-pkg/rec:named', { name: 'outer', first: mid, deep: { second: ref('fixture-pkg/rec:named', { name: 'sibling' }) } });
    const fn = await resolveRef(outer, { allow, importer: imp });
    expect(order).toEqual(['leaf', 'middle', 'sibling', 'outer']);
    expect(built.get('outer')).toBe(fn);
  });

  it('the factory receives the nested functions themselves', async () => {
    let received: Record<string, unknown> | undefined;
    const inner = (x: number): number => x + 1;
    const imp = fixtureImporter({
      'fixture-pkg/a': { outer: (config: Record<string, unknown>) => { received = config; return () => 0; }, inner: () => inner },
    });
    await resolveRef(ref('fixture-pkg/a:outer', { judge: ref('fixture-pkg/a:inner'), opts: { list: [1, 'x'] } }), { allow, importer: imp });
    expect(received).toEqual({ judge: inner, opts: { list: [1, 'x'] } });
    expect(received?.judge).toBe(inner);
    expect(Object.isFrozen(received)).toBe(false); // a factory may mutate its own copy
  });

  it('a disallowed nested Ref is refused even when the outer one is allowed, before any import', async () => {
    const imp = fixtureImporter({ 'fixture-pkg/good': 'good.mjs', 'other-pkg': { f: () => () => 1 } });
    const outer = ref('fixture-pkg/good:linear', { a: ref('fixture-pkg/good:linear'), b: { judge: ref('other-pkg:f') } });
    const error = await refErrorOf(resolveRef(outer, { allow, importer: imp }));
    expect(error.code).toBe('not-allowed');
    expect(error.target).toBe('other-pkg:f');
    expect(error.path).toBe('config.b.judge');
    expect(error.message).toContain('Ref "other-pkg:f" at config.b.judge');
    expect(imp.calls).toEqual([]);
  });

  it('an error in a nested Ref names where it sits', async () => {
    const imp = fixtureImporter({ 'fixture-pkg/good': 'good.mjs' });
    const outer = ref('fixture-pkg/good:linear', { x: { judge: ref('fixture-pkg/good:strict', { temperature: 9 }) } });
    const error = await refErrorOf(resolveRef(outer, { allow, importer: imp }));
    expect(error.code).toBe('factory-threw');
    expect(error.path).toBe('config.x.judge');
    expect(error.message).toContain('Ref "fixture-pkg/good:strict" at config.x.judge: factory "strict" threw');
    const deeper = ref('fixture-pkg/good:linear', { a: ref('fixture-pkg/good:linear', { b: ref('fixture-pkg/good:nope') }) });
    const deepError = await refErrorOf(resolveRef(deeper, { allow, importer: imp }));
    expect(deepError.code).toBe('no-such-export');
    expect(deepError.path).toBe('config.a.config.b');
  });
});

describe('ACCEPTANCE 7: a resolved factory behaves like calling it directly', () => {
  it('same outputs, same errors, for the same config', async () => {
    const good = await import('../../fixtures/ref/good.mjs');
    const config = { factor: -2.5, offset: 0.125 };
    const resolved = await resolveRef(ref('fixture-pkg/good:linear', config), { allow, importer: fixtureImporter({ 'fixture-pkg/good': 'good.mjs' }) });
    const direct = good.linear(config);
    for (const x of [0, 1, -3, 0.1, 1e9, Number.NaN, Number.POSITIVE_INFINITY]) expect(resolved(x)).toBe(direct(x));
  });

  it('with nested Refs: the same as composing the factories by hand', async () => {
    const module = {
      add: (c: { n: number }) => (x: number) => x + c.n,
      pipe: (c: { first: (x: number) => number; then: { f: (x: number) => number } }) => (x: number) => c.then.f(c.first(x)),
      fails: (c: { when: number }) => (x: number) => { if (x === c.when) throw new TypeError(`bad ${x}`); return x; },
    };
    const imp = fixtureImporter({ 'fixture-pkg/m': module });
    const resolved = await resolveRef(
      ref('fixture-pkg/m:pipe', { first: ref('fixture-pkg/m:add', { n: 3 }), then: { f: ref('fixture-pkg/m:fails', { when: 5 }) } }),
      { allow, importer: imp },
    );
    const direct = module.pipe({ first: module.add({ n: 3 }), then: { f: module.fails({ when: 5 }) } });
    for (const x of [-1, 0, 1, 10]) expect(resolved(x)).toBe(direct(x));
    expect(() => resolved(2)).toThrow(new TypeError('bad 5'));
    expect(() => direct(2)).toThrow(new TypeError('bad 5'));
  });
});

describe('cache', () => {
  function counting() {
    const calls: unknown[] = [];
    const module = { make: (config: unknown) => { calls.push(config); return () => config; } };
    return { calls, module };
  }

  it('the same Ref resolved twice builds once; a different config builds again', async () => {
    const { calls, module } = counting();
    const imp = fixtureImporter({ 'fixture-pkg/c': module });
    const a1 = await resolveRef(ref('fixture-pkg/c:make', { model: 'x', t: 1 }), { allow, importer: imp });
    const a2 = await resolveRef(JSON.parse('{"config":{"t":1,"model":"x"},"$ref":"fixture-pkg/c:make","call":true}'), { allow, importer: imp });
    expect(a2).toBe(a1);
    expect(calls).toHaveLength(1);
    const b = await resolveRef(ref('fixture-pkg/c:make', { model: 'x', t: 2 }), { allow, importer: imp });
    expect(b).not.toBe(a1);
    expect(calls).toHaveLength(2);
    expect(imp.calls).toEqual(['fixture-pkg/c', 'fixture-pkg/c']);
  });

  it('concurrent resolves share one promise', async () => {
    const { calls, module } = counting();
    let imports = 0;
    const imp = async (): Promise<unknown> => {
      imports++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      return module;
    };
    const all = await Promise.all(Array.from({ length: 5 }, () => resolveRef(ref('fixture-pkg/c:make', { k: 1 }), { allow, importer: imp })));
    expect(new Set(all).size).toBe(1);
    expect(calls).toHaveLength(1);
    expect(imports).toBe(1);
  });

  it('a failed resolve is not cached', async () => {
    let fail = true;
    const module = { make: () => { if (fail) throw new Error('not yet'); return () => 'ok'; } };
    const imp = fixtureImporter({ 'fixture-pkg/c': module });
    await expect(resolveRef(ref('fixture-pkg/c:make'), { allow, importer: imp })).rejects.toMatchObject({ code: 'factory-threw' });
    fail = false;
    const fn = await resolveRef(ref('fixture-pkg/c:make'), { allow, importer: imp });
    expect(fn()).toBe('ok');
  });

  it('is keyed by allowlist and importer too, and clearRefCache forgets', async () => {
    const { calls, module } = counting();
    const imp = fixtureImporter({ 'fixture-pkg/c': module });
    const r = ref('fixture-pkg/c:make');
    await resolveRef(r, { allow, importer: imp });
    await resolveRef(r, { allow: [...allow, '@acme/*'], importer: imp });
    await resolveRef(r, { allow, importer: fixtureImporter({ 'fixture-pkg/c': module }) });
    expect(calls).toHaveLength(3);
    await resolveRef(r, { allow, importer: imp });
    expect(calls).toHaveLength(3);
    clearRefCache();
    await resolveRef(r, { allow, importer: imp });
    expect(calls).toHaveLength(4);
  });

  it('a nested Ref shared by two outer Refs is built once', async () => {
    const built: string[] = [];
    const module = { make: (config: { name: string }) => { built.push(config.name); return () => config.name; } };
    const imp = fixtureImporter({ 'fixture-pkg/c': module });
    const shared = ref('fixture-pkg/c:make', { name: 'client' });
    await resolveRef(ref('fixture-pkg/c:make', { name: 'a', client: shared }), { allow, importer: imp });
    await resolveRef(ref('fixture-pkg/c:make', { name: 'b', client: shared }), { allow, importer: imp });
    expect(built).toEqual(['client', 'a', 'b']);
  });
});

describe('resolveRef: what it remembers across calls', () => {
  it('an allow array changed after a first resolve is compiled again (admits and refuses by its new patterns)', async () => {
    const importer = fixtureImporter({ 'fixture-pkg/good': 'good.mjs', 'other-pkg/good': 'good.mjs' });
    const patterns = ['fixture-pkg/*'];
    await expect(resolveRef(ref('fixture-pkg/good:linear', { factor: 1, offset: 0 }), { allow: patterns, importer })).resolves.toBeTypeOf('function');
    expect((await refErrorOf(resolveRef(ref('other-pkg/good:linear', { factor: 1, offset: 0 }), { allow: patterns, importer }))).code).toBe('not-allowed');
    patterns[0] = 'other-pkg/*';
    await expect(resolveRef(ref('other-pkg/good:linear', { factor: 1, offset: 0 }), { allow: patterns, importer })).resolves.toBeTypeOf('function');
    expect((await refErrorOf(resolveRef(ref('fixture-pkg/good:linear', { factor: 2, offset: 0 }), { allow: patterns, importer }))).code).toBe('not-allowed');
    patterns.push('*');
    await expect(resolveRef(ref('other-pkg/good:linear', { factor: 1, offset: 0 }), { allow: patterns, importer })).rejects.toBeInstanceOf(AllowlistError);
  });

  it('the same Ref value resolved again is still snapshotted and checked (a later bad config is refused)', async () => {
    const importer = fixtureImporter({ 'fixture-pkg/good': 'good.mjs' });
    const value = { $ref: 'fixture-pkg/good:linear', config: { factor: 1, offset: 0 } as Record<string, unknown> };
    await expect(resolveRef(value, { allow, importer })).resolves.toBeTypeOf('function');
    value.config.factor = () => 1;
    expect((await refErrorOf(resolveRef(value, { allow, importer }))).code).toBe('bad-config');
    value.config.factor = 1;
    value.$ref = 'node:fs:readFileSync';
    expect((await refErrorOf(resolveRef(value, { allow, importer }))).code).toBe('not-allowed');
  });
});

describe('resolveRefJson: a Ref as JSON text, checked once per text and allowlist', () => {
  function counting() {
    const calls: unknown[] = [];
    const module = { make: (config: unknown) => { calls.push(config); return () => config; } };
    return { calls, module };
  }

  it('resolves to the function resolveRef gives for the parsed text, from the same cache', async () => {
    const { calls, module } = counting();
    const importer = fixtureImporter({ 'fixture-pkg/c': module });
    const text = JSON.stringify(ref('fixture-pkg/c:make', { model: 'x' }));
    const first = await resolveRefJson(text, { allow, importer });
    expect(await resolveRefJson(text, { allow, importer })).toBe(first);
    expect(await resolveRef(JSON.parse(text), { allow, importer })).toBe(first);
    expect(await resolveRefJson('{"config":{"model":"x"},"$ref":"fixture-pkg/c:make"}', { allow, importer })).toBe(first);
    expect(calls).toEqual([{ model: 'x' }]);
  });

  it('a refused text is refused again, each time with the error resolveRef gives', async () => {
    const importer = fixtureImporter({});
    for (const text of [
      '{"$ref":"node:fs:readFileSync","call":false}',
      '{"$ref":"other-pkg/x:make"}',
      '{"$ref":"fixture-pkg/x:make","config":{"n":[{"deep":1}]}}',
      '{"$ref":"fixture-pkg/x"}',
      '[1]',
    ]) {
      const expected = await refErrorOf(resolveRef(JSON.parse(text), { allow, importer }));
      for (let i = 0; i < 2; i++) {
        const error = await refErrorOf(resolveRefJson(text, { allow, importer }));
        expect({ code: error.code, message: error.message }).toEqual({ code: expected.code, message: expected.message });
      }
    }
    expect(importer.calls).toEqual([]);
  });

  it('a text admitted before is checked again under other patterns (an allowlist change is honoured)', async () => {
    const importer = fixtureImporter({ 'fixture-pkg/good': 'good.mjs' });
    const text = JSON.stringify(ref('fixture-pkg/good:linear', { factor: 1, offset: 0 }));
    const patterns = ['fixture-pkg/*'];
    await expect(resolveRefJson(text, { allow: patterns, importer })).resolves.toBeTypeOf('function');
    patterns[0] = 'other-pkg/*';
    expect((await refErrorOf(resolveRefJson(text, { allow: patterns, importer }))).code).toBe('not-allowed');
    expect((await refErrorOf(resolveRefJson(text, { allow: Allowlist.compile([]), importer }))).code).toBe('not-allowed');
    await expect(resolveRefJson(text, { allow: Allowlist.compile(['fixture-pkg/good']), importer })).resolves.toBeTypeOf('function');
  });

  it('a failed import or factory is retried on the next resolve of the same text', async () => {
    let fail = true;
    const module = { make: () => { if (fail) throw new Error('not yet'); return () => 'ok'; } };
    const map: Record<string, object> = {};
    const importer = fixtureImporter(map);
    const text = JSON.stringify(ref('fixture-pkg/c:make'));
    expect((await refErrorOf(resolveRefJson(text, { allow, importer }))).code).toBe('cannot-import');
    map['fixture-pkg/c'] = module;
    expect((await refErrorOf(resolveRefJson(text, { allow, importer }))).code).toBe('factory-threw');
    fail = false;
    expect((await resolveRefJson(text, { allow, importer }))()).toBe('ok');
  });

  it('is keyed by importer too, and clearRefCache forgets the texts with the functions', async () => {
    const { calls, module } = counting();
    const importer = fixtureImporter({ 'fixture-pkg/c': module });
    const text = JSON.stringify(ref('fixture-pkg/c:make', { k: 0 }));
    const first = await resolveRefJson(text, { allow, importer });
    await resolveRefJson(text, { allow, importer: fixtureImporter({ 'fixture-pkg/c': module }) });
    expect(calls).toHaveLength(2);
    clearRefCache();
    expect(await resolveRefJson(text, { allow, importer })).not.toBe(first);
    expect(calls).toHaveLength(3);
  });

  it('text that is not JSON is a SyntaxError', async () => {
    await expect(resolveRefJson('{"$ref":', { allow, importer: fixtureImporter({}) })).rejects.toBeInstanceOf(SyntaxError);
  });
});
