// ACCEPTANCE 1 and 2 at the wire contract: a Ref's target has the form "module:export", and
// its config is plain JSON data (scalars, arrays of scalars, objects, nested Refs), with the
// path of the first bad value named.
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, RefSchema, RolloutSpecSchema, parseRefTarget, parseRolloutSpec } from '../../../src/spec/index.js';
import { issuePaths, rawSpec } from './spec-fixture.js';

/** Parses a spec whose `run` Ref has `config`; returns the failed result's paths and first message. */
function refuseRunConfig(config: Record<string, unknown>): { paths: string[]; message: string } {
  const raw = rawSpec({ run: { $ref: 'rollout-queue/runners:codeRunner', config } });
  const parsed = parseRolloutSpec(raw);
  expect(parsed.success).toBe(false);
  // The schema alone (used on objects built in code) refuses it at the same path.
  const schema = RolloutSpecSchema.safeParse(raw);
  expect(schema.success).toBe(false);
  expect(issuePaths(schema)).toStrictEqual(issuePaths(parsed));
  return { paths: issuePaths(parsed), message: parsed.error?.issues[0]?.message ?? '' };
}

/** `{ a: { a: ... { a: 1 } } }` with `levels` objects. */
function nestedObjects(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { a: 1 };
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

describe('Ref target: "module:export"', () => {
  it.each(['rollout-queue/rewards', 'lastNumber', 'pkg:', ':lastNumber', ''])('refuses %j, saying the form is module:export', (target) => {
    const parsed = parseRolloutSpec(rawSpec({ run: { $ref: target, config: {} } }));
    expect(parsed.success).toBe(false);
    expect(issuePaths(parsed)).toStrictEqual(['run.$ref']);
    expect(parsed.error?.issues[0]?.message).toContain('"module:export"');
  });

  it('refuses an export that is not an identifier, still naming the form', () => {
    const message = parseRefTarget('pkg:not-an-identifier');
    expect(typeof message).toBe('string');
    expect(message).toContain('"module:export"');
  });

  it('refuses a non-string target', () => {
    for (const target of [null, 1, { module: 'a', export: 'b' }]) {
      const parsed = parseRolloutSpec(rawSpec({ reward: { $ref: target, config: {} } }));
      expect(issuePaths(parsed)).toStrictEqual(['reward.$ref']);
      expect(parsed.error?.issues[0]?.message).toContain('"module:export"');
    }
  });

  it('splits at the last ":" so scoped and subpath modules work', () => {
    expect(parseRefTarget('@acme/rollouts/runners:agent')).toStrictEqual({ module: '@acme/rollouts/runners', exportName: 'agent' });
    expect(parseRefTarget('rollout-queue/rewards:lastNumber')).toStrictEqual({ module: 'rollout-queue/rewards', exportName: 'lastNumber' });
  });

  it('keeps a target with control characters out of the message raw (JSON-quoted)', () => {
    const message = parseRefTarget('pkg\nINFO forged');
    expect(message).toContain('"pkg\\nINFO forged"');
    expect(message).not.toContain('\n');
  });

  it('refuses unknown Ref fields and a non-boolean call, naming them', () => {
    expect(issuePaths(parseRolloutSpec(rawSpec({ run: { $ref: 'a:b', config: {}, args: [] } })))).toStrictEqual(['run.args']);
    expect(issuePaths(parseRolloutSpec(rawSpec({ run: { $ref: 'a:b', config: {}, call: 'no' } })))).toStrictEqual(['run.call']);
  });

  it('refuses a Ref that is a class instance rather than a plain object', () => {
    class RefLike {
      $ref = 'a:b';
      config = {};
    }
    const parsed = parseRolloutSpec(rawSpec({ run: new RefLike() }));
    expect(parsed.success).toBe(false);
    expect(issuePaths(parsed)).toStrictEqual(['run']);
  });
});

describe('Ref config: plain JSON data only', () => {
  it('accepts scalars, arrays of scalars, objects of these, and nested Refs anywhere inside', () => {
    const config = {
      s: 'text',
      n: -1.5e-3,
      i: 3,
      b: false,
      z: null,
      list: ['a', 1, true, null],
      model: { name: 'small', temperature: 0.2, stop: ['\n'] },
      judge: { $ref: '@acme/judges:llmJudge', config: { rubric: { $ref: '@acme/rubrics:strict', config: {} } }, call: true },
      deep: { deeper: { grader: { $ref: 'rollout-queue/rewards:exactMatch', config: {}, call: false } } },
    };
    const parsed = parseRolloutSpec(rawSpec({ reward: { $ref: 'rollout-queue/rewards:lastNumber', config } }));
    expect(parsed.success).toBe(true);
    expect(parsed.data?.reward.config).toStrictEqual(config);
    expect(RefSchema.parse({ $ref: 'a:b', config })).toStrictEqual({ $ref: 'a:b', config });
  });

  const refused: readonly [string, Record<string, unknown>, string, RegExp][] = [
    ['a function', { model: { temperature: () => 0.2 } }, 'run.config.model.temperature', /function/],
    ['a Date instance', { model: { temperature: new Date(0) } }, 'run.config.model.temperature', /instance of Date/],
    ['a Map instance', { cache: new Map([['a', 1]]) }, 'run.config.cache', /instance of Map/],
    ['a class instance', { client: new (class Client {})() }, 'run.config.client', /instance of Client/],
    ['undefined', { model: { temperature: undefined } }, 'run.config.model.temperature', /undefined/],
    ['NaN', { model: { temperature: Number.NaN } }, 'run.config.model.temperature', /NaN/],
    ['Infinity', { model: { temperature: Number.POSITIVE_INFINITY } }, 'run.config.model.temperature', /Infinity/],
    ['-Infinity', { limits: { low: Number.NEGATIVE_INFINITY } }, 'run.config.limits.low', /Infinity/],
    ['a bigint', { seed: 1n }, 'run.config.seed', /bigint/],
    ['a symbol', { tag: Symbol('t') }, 'run.config.tag', /symbol/],
    ['an array holding an object', { stops: ['a', { text: 'b' }] }, 'run.config.stops.1', /inside an array/],
    ['an array holding an array', { matrix: [[1, 2]] }, 'run.config.matrix.0', /inside an array/],
    ['a "constructor" key', { model: { constructor: 'x' } }, 'run.config.model.constructor', /not allowed/],
    ['a "prototype" key', { prototype: {} }, 'run.config.prototype', /not allowed/],
    ['a bad value inside a nested Ref', { judge: { $ref: '@acme/judges:llmJudge', config: { temperature: Number.NaN } } }, 'run.config.judge.config.temperature', /NaN/],
    ['a nested Ref without ":"', { judge: { $ref: '@acme/judges', config: {} } }, 'run.config.judge.$ref', /"module:export"/],
  ];

  it.each(refused)('refuses %s, naming its path', (_name, config, path, message) => {
    const refusal = refuseRunConfig(config);
    expect(refusal.paths).toStrictEqual([path]);
    expect(refusal.message).toMatch(message);
  });

  it('refuses a config that is not an object', () => {
    for (const config of [null, [], 'x', 1]) {
      expect(issuePaths(parseRolloutSpec(rawSpec({ run: { $ref: 'a:b', config } })))).toStrictEqual(['run.config']);
    }
  });

  it('accepts nesting well inside MAX_JSON_DEPTH and refuses nesting past it, naming where', () => {
    expect(parseRolloutSpec(rawSpec({ run: { $ref: 'a:b', config: nestedObjects(MAX_JSON_DEPTH - 2) } })).success).toBe(true);
    const refusal = refuseRunConfig(nestedObjects(MAX_JSON_DEPTH + 1));
    expect(refusal.message).toContain(`deeper than ${MAX_JSON_DEPTH}`);
    expect(refusal.paths[0]).toMatch(/^run\.config(\.a)+$/);
  });

  it('refuses a chain of nested Refs deeper than MAX_JSON_DEPTH', () => {
    let ref: Record<string, unknown> = { $ref: 'a:leaf', config: {} };
    for (let i = 0; i < MAX_JSON_DEPTH; i++) ref = { $ref: 'a:wrap', config: { inner: ref } };
    const parsed = parseRolloutSpec(rawSpec({ run: ref }));
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toContain(`deeper than ${MAX_JSON_DEPTH}`);
    expect(issuePaths(parsed)[0]).toMatch(/^run(\.config\.inner)+/);
  });

  it('refuses a task nested past MAX_JSON_DEPTH (tasks are JSON data too)', () => {
    const parsed = parseRolloutSpec(rawSpec({ task: { id: 't', data: nestedObjects(MAX_JSON_DEPTH + 1) } }));
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toContain(`deeper than ${MAX_JSON_DEPTH}`);
  });

  it('refuses bad values in a task with their path, but allows arrays of objects there', () => {
    expect(parseRolloutSpec(rawSpec({ task: { id: 't', examples: [{ q: 1 }, [2]] } })).success).toBe(true);
    expect(issuePaths(parseRolloutSpec(rawSpec({ task: { id: 't', meta: { at: new Date(0) } } })))).toStrictEqual(['task.meta.at']);
    expect(issuePaths(parseRolloutSpec(rawSpec({ task: { id: 't', list: [1, Number.NaN] } })))).toStrictEqual(['task.list.1']);
  });
});
