import { describe, expect, it } from 'vitest';
import { CallerError, declaredGoldKeys, goldKeysOfConfig, RolloutSpecSchema, withGoldKeys, withoutKeys } from '../../../src/spec/index.js';
import { exactMatch, lastNumber, regex } from '../../../src/rewards/index.js';

describe('gold keys in a Ref config', () => {
  it('reads goldKey, the engine convention gold_key, and the list forms goldKeys / gold_keys', () => {
    expect(goldKeysOfConfig({ goldKey: 'answer' })).toEqual(['answer']);
    expect(goldKeysOfConfig({ gold_key: 'gold' })).toEqual(['gold']);
    expect(goldKeysOfConfig({ goldKeys: ['a', 'b'], gold_keys: ['c'] })).toEqual(['a', 'b', 'c']);
    expect(goldKeysOfConfig({ gold_key: ['solution'] })).toEqual(['solution']);
  });

  it('ignores what names no key (empty strings, numbers, objects): the factory refuses those itself', () => {
    expect(goldKeysOfConfig({ goldKey: '', gold_key: 5, goldKeys: [1, '', 'ok'], gold_keys: { a: 1 } })).toEqual(['ok']);
    expect(goldKeysOfConfig({ model: 'x', tolerance: 0.1 })).toEqual([]);
  });
});

describe('a reward function declaring its gold (goldKeys)', () => {
  it('withGoldKeys sets a frozen goldKeys on the same function', () => {
    const fn = (): number => 1;
    const declared = withGoldKeys(fn, 'solution');
    expect(declared).toBe(fn);
    expect(declared.goldKeys).toEqual(['solution']);
    expect(Object.isFrozen(declared.goldKeys)).toBe(true);
    expect(withGoldKeys(() => 0, ['a', 'b']).goldKeys).toEqual(['a', 'b']);
  });

  it('withGoldKeys refuses a key that is not a non-empty string', () => {
    expect(() => withGoldKeys(() => 0, [''])).toThrow(TypeError);
    expect(() => withGoldKeys(() => 0, [5 as unknown as string])).toThrow('every gold key must be a non-empty task key, got 5 (number)');
  });

  it('declaredGoldKeys reads a string or an array, [] when nothing is declared', () => {
    expect(declaredGoldKeys(Object.assign(() => 0, { goldKeys: 'gold' }), 'm:r')).toEqual(['gold']);
    expect(declaredGoldKeys(Object.assign(() => 0, { goldKeys: ['a', 'b'] }), 'm:r')).toEqual(['a', 'b']);
    expect(declaredGoldKeys(() => 0, 'm:r')).toEqual([]);
    expect(declaredGoldKeys(undefined, 'm:r')).toEqual([]);
  });

  it('declaredGoldKeys refuses a bad declaration as a caller error naming the reward', () => {
    for (const bad of [5, '', [''], ['a', 3], { a: 1 }]) {
      const fn = Object.assign(() => 0, { goldKeys: bad });
      expect(() => declaredGoldKeys(fn, 'acme/rewards:judge')).toThrow(CallerError);
    }
    expect(() => declaredGoldKeys(Object.assign(() => 0, { goldKeys: 5 }), 'acme/rewards:judge')).toThrow(
      'reward acme/rewards:judge declares goldKeys = 5 (number); it must be the task key its gold is at, or an array of such keys (non-empty strings): fix the reward factory',
    );
  });

  it('the built-in rewards that read a gold answer declare its key; regex declares none', () => {
    expect(lastNumber().goldKeys).toEqual(['answer']);
    expect(lastNumber({ goldKey: 'gold' }).goldKeys).toEqual(['gold']);
    expect(exactMatch({ goldKey: 'expected' }).goldKeys).toEqual(['expected']);
    expect(regex({ pattern: 'x' }).goldKeys).toBeUndefined();
    // Declaring changes nothing about scoring.
    expect(lastNumber({ goldKey: 'gold' })({ gold: 42 }, 'Answer: 42')).toBe(1);
  });
});

describe('withoutKeys', () => {
  it('returns the task itself when it holds none of the keys', () => {
    const task = { id: 't', question: 'q' };
    expect(withoutKeys(task, ['answer'])).toBe(task);
    expect(withoutKeys(task, [])).toBe(task);
  });

  it('returns a copy without the keys, the task untouched', () => {
    const task = { id: 't', question: 'q', answer: 391, gold: 'x' };
    const shown = withoutKeys(task, ['answer', 'gold', 'absent']);
    expect(shown).toEqual({ id: 't', question: 'q' });
    expect(task).toEqual({ id: 't', question: 'q', answer: 391, gold: 'x' });
  });
});

describe('spec fields goldKeys and goldVisibleToRun', () => {
  const base = { v: 1, leaseId: 'r.t', runId: 'r', runAttemptId: 'a', rendered: '', task: {}, run: { $ref: 'm:e' }, reward: { $ref: 'm:e' } };

  it('are optional and absent after a parse of a spec without them', () => {
    const spec = RolloutSpecSchema.parse(base);
    expect('goldKeys' in spec).toBe(false);
    expect('goldVisibleToRun' in spec).toBe(false);
  });

  it('take a list of task keys and a boolean', () => {
    expect(RolloutSpecSchema.parse({ ...base, goldKeys: ['solution'], goldVisibleToRun: true })).toMatchObject({ goldKeys: ['solution'], goldVisibleToRun: true });
  });

  it('refuse an empty key and a non-boolean opt-in, naming the field', () => {
    const empty = RolloutSpecSchema.safeParse({ ...base, goldKeys: [''] });
    expect(empty.success).toBe(false);
    expect(empty.error?.issues[0]).toMatchObject({ path: ['goldKeys', 0], message: 'goldKeys lists task keys like "answer"; an empty string names no key' });
    const opt = RolloutSpecSchema.safeParse({ ...base, goldVisibleToRun: 'yes' });
    expect(opt.error?.issues[0]?.path).toEqual(['goldVisibleToRun']);
  });
});
