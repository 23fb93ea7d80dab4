import { describe, expect, it } from 'vitest';
import { Allowlist, AllowlistError, DEFAULT_ALLOWLIST, checkBareSpecifier } from '../../../src/ref/index.js';

describe('Allowlist', () => {
  it('admits rollout-queue and its subpaths by default, and nothing else', () => {
    const allow = Allowlist.compile();
    expect(allow.patterns).toEqual(DEFAULT_ALLOWLIST);
    expect(allow.widened).toBe(false);
    for (const ok of ['rollout-queue', 'rollout-queue/rewards', 'rollout-queue/runners', 'rollout-queue/a/b.js']) {
      expect(allow.check(ok)).toMatchObject({ allowed: true });
    }
    for (const refused of ['rollout-queue-evil', 'rollout-queue.evil', 'rollout-queuex/rewards', '@rollout-queue/x', 'zod', 'evil/rollout-queue']) {
      const decision = allow.check(refused);
      expect(decision).toMatchObject({ allowed: false, code: 'not-allowed' });
      if (!decision.allowed) expect(decision.reason).toContain('"rollout-queue/*"');
    }
  });

  it('names the admitting pattern', () => {
    const allow = Allowlist.compile(['rollout-queue', '@acme/*', 'tools/eval/*', 'exact-pkg/sub']);
    expect(allow.check('rollout-queue')).toMatchObject({ allowed: true, pattern: 'rollout-queue' });
    expect(allow.check('@acme/rollouts')).toMatchObject({ allowed: true, pattern: '@acme/*' });
    expect(allow.check('@acme/rollouts/runners')).toMatchObject({ allowed: true, pattern: '@acme/*' });
    expect(allow.check('tools/eval')).toMatchObject({ allowed: true, pattern: 'tools/eval/*' });
    expect(allow.check('tools/eval/judges')).toMatchObject({ allowed: true, pattern: 'tools/eval/*' });
    expect(allow.check('exact-pkg/sub')).toMatchObject({ allowed: true, pattern: 'exact-pkg/sub' });
  });

  it('matches per path segment, never by string prefix', () => {
    const allow = Allowlist.compile(['rollout-queue', '@acme/*', 'tools/eval/*', 'exact-pkg/sub']);
    for (const refused of ['rollout-queue/rewards', '@acme-evil/x', '@acmex/y', 'tools/evaluator', 'tools', 'exact-pkg', 'exact-pkg/sub/deeper', 'exact-pkg/subx']) {
      expect(allow.check(refused), refused).toMatchObject({ allowed: false, code: 'not-allowed' });
    }
  });

  it('widening is explicit and visible', () => {
    const allow = Allowlist.compile([...DEFAULT_ALLOWLIST, '@acme/*', '@acme/*']);
    expect(allow.widened).toBe(true);
    expect(allow.patterns).toEqual(['rollout-queue', 'rollout-queue/*', '@acme/*']);
    expect(Allowlist.compile(['rollout-queue/*', 'rollout-queue']).widened).toBe(false);
    expect(Allowlist.compile(['b', 'a']).key).toBe(Allowlist.compile(['a', 'b']).key);
    expect(Object.isFrozen(allow)).toBe(true);
  });

  it('an empty allowlist refuses everything', () => {
    expect(Allowlist.compile([]).check('rollout-queue')).toMatchObject({ allowed: false, code: 'not-allowed' });
  });

  it.each([
    ['*'], ['**'], ['node:*'], ['node:fs'], ['fs'], ['fs/*'], ['child_process'], ['./x'], ['../x/*'], ['/abs/*'],
    ['file:///tmp/*'], ['http://evil/*'], ['pkg*'], ['pkg/*/x'], ['@scope'], ['@*/*'], ['pkg/**'], [''], ['a//b'],
    ['rollout-queue/../x'], ['Rollout-Queue'], ['pkg /*'], ['@scope/'],
  ])('refuses the malformed pattern %j with a clear error', (pattern) => {
    let caught: unknown;
    try {
      Allowlist.compile([pattern]);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AllowlistError);
    const error = caught as AllowlistError;
    expect(error.pattern).toBe(pattern);
    expect(error.message).toContain(JSON.stringify(pattern));
    expect(error.message).toMatch(/"pkg\/\*"/); // says which forms are allowed
  });

  it('refuses non-string patterns and a non-array', () => {
    expect(() => Allowlist.compile([42 as unknown as string])).toThrow(AllowlistError);
    expect(() => Allowlist.compile('rollout-queue/*' as unknown as string[])).toThrow(/array/);
  });
});

describe('checkBareSpecifier', () => {
  it('splits package name and subpath', () => {
    expect(checkBareSpecifier('rollout-queue/rewards')).toEqual({ packageName: 'rollout-queue', subpath: 'rewards' });
    expect(checkBareSpecifier('@acme/rollouts/runners/Code.js')).toEqual({ packageName: '@acme/rollouts', subpath: 'runners/Code.js' });
    expect(checkBareSpecifier('lodash')).toEqual({ packageName: 'lodash', subpath: '' });
  });

  it.each([
    ['node:fs', 'not-allowed', /builtin/],
    ['fs', 'not-allowed', /builtin/],
    ['fs/promises', 'not-allowed', /builtin/],
    ['child_process', 'not-allowed', /builtin/],
    ['fs/anything', 'not-allowed', /builtin/],
    ['./x', 'not-allowed', /path/],
    ['../x', 'not-allowed', /path/],
    ['.', 'not-allowed', /path/],
    ['/etc/passwd', 'not-allowed', /path/],
    ['file:///tmp/x.mjs', 'not-allowed', /URL/],
    ['data:text/javascript,export default 1', 'not-allowed', /URL/],
    ['http://evil/x', 'not-allowed', /URL/],
    ['C:/x', 'not-allowed', /URL/],
    ['', 'malformed-target', /empty/],
    ['rollout-queue/../x', 'malformed-target', /"\.\."/],
    ['rollout-queue//x', 'malformed-target', /empty path segment/],
    ['rollout-queue/', 'malformed-target', /empty path segment/],
    ['rollout-queue /x', 'malformed-target', /whitespace/],
    ['rollout-queue\\x', 'malformed-target', /backslash/],
    ['rollout-queue\0', 'malformed-target', /control/],
    ['rollout-queue/%2e%2e/x', 'malformed-target', /"%"/],
    ['Rollout-Queue', 'malformed-target', /npm name/],
    ['_private', 'malformed-target', /npm name/],
    ['.hidden', 'malformed-target', /npm name/],
    ['@scope', 'malformed-target', /@scope\/name/],
    ['@Scope/x', 'malformed-target', /@scope\/name/],
    ['pkg/./x', 'malformed-target', /subpath segment/],
    ['pkg/a$b', 'malformed-target', /subpath segment/],
    ['#internal', 'malformed-target', /npm name/],
    ['x'.repeat(600), 'malformed-target', /longer than/],
  ])('%j is refused (%s)', (specifier, code, reason) => {
    const decision = checkBareSpecifier(specifier);
    expect(decision).toMatchObject({ code });
    expect((decision as { reason: string }).reason).toMatch(reason);
  });
});

describe('remembered answers', () => {
  it('a specifier asked again gets the same frozen answer', () => {
    const list = Allowlist.compile(['fixture-pkg/*']);
    for (const specifier of ['fixture-pkg/a', 'other', 'fs', './x']) {
      const first = list.check(specifier);
      expect(Object.isFrozen(first)).toBe(true);
      expect(list.check(specifier)).toEqual(first);
      expect(Object.isFrozen(checkBareSpecifier(specifier))).toBe(true);
      expect(checkBareSpecifier(specifier)).toEqual(checkBareSpecifier(specifier));
    }
    expect(list.check('fixture-pkg/a').allowed).toBe(true);
    expect(Allowlist.compile(['other']).check('fixture-pkg/a').allowed).toBe(false);
  });
});
