import { describe, expect, it } from 'vitest';
import { answerText, contains, exactMatch, regex } from '../../../src/rewards/index.js';
import { callerError } from '../../helpers/caller-error.js';

describe('answerText', () => {
  it.each([
    ['a string', 'hi', 'hi'],
    ['stdout of a code run', { stdout: 'out', stderr: 'err' }, 'out'],
    ['an object without string stdout', { stdout: 3 }, '{"stdout":3}'],
    ['an array', ['a', 1], '["a",1]'],
    ['a number', 7, '7'],
    ['null', null, 'null'],
    ['undefined', undefined, ''],
  ] as Array<[string, unknown, string]>)('%s', (_label, output, expected) => {
    expect(answerText(output)).toBe(expected);
  });

  it('does not throw on values JSON cannot hold', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(answerText(cyclic)).toBe('[object Object]');
    expect(answerText(10n)).toBe('10');
  });
});

describe('exactMatch', () => {
  const cases: Array<[string, object, unknown, unknown, 0 | 1]> = [
    ['equal', {}, 'Paris', 'Paris', 1],
    ['trimmed by default', {}, 'Paris', '  Paris\n', 1],
    ['not trimmed when trim: false', { trim: false }, 'Paris', 'Paris\n', 0],
    ['case-sensitive by default', {}, 'Paris', 'paris', 0],
    ['case-insensitive when asked', { caseSensitive: false }, 'Paris', 'PARIS', 1],
    ['a numeric gold compares as text', {}, 42, '42', 1],
    ['a different text', {}, 'Paris', 'Paris, France', 0],
    ['stdout of a code run', {}, 'ok', { stdout: 'ok\n', stderr: '' }, 1],
    ['empty gold matches an empty answer', {}, '', '  ', 1],
  ];
  it.each(cases)('%s', (_label, config, gold, output, expected) => {
    expect(exactMatch(config)({ answer: gold as string }, output)).toBe(expected);
  });

  it('missing gold → CallerError naming goldKey and task keys', () => {
    const err = callerError(() => exactMatch({ goldKey: 'label' })({ id: 1, text: 'x' }, 'x'));
    expect(err.message).toContain('task.label');
    expect(err.message).toContain('task keys: id, text');
  });

  it('refuses bad config', () => {
    expect(callerError(() => exactMatch({ trim: 'yes' } as never)).message).toMatch(/^exactMatch: config\.trim must be true or false, got "yes" \(string\)/);
    expect(callerError(() => exactMatch({ casesensitive: false } as never)).message).toMatch(/config\.casesensitive is not an option/);
  });
});

describe('contains', () => {
  const cases: Array<[string, object, unknown, unknown, 0 | 1]> = [
    ['substring', {}, 'Paris', 'The capital is Paris.', 1],
    ['case-insensitive by default', {}, 'paris', 'The capital is PARIS.', 1],
    ['case-sensitive when asked', { caseSensitive: true }, 'paris', 'The capital is PARIS.', 0],
    ['absent', {}, 'Rome', 'The capital is Paris.', 0],
    ['numeric gold as text', {}, 33, 'Answer: 33', 1],
    ['stdout of a code run', {}, 'ok', { stdout: 'all ok', stderr: 'not ok' }, 1],
  ];
  it.each(cases)('%s', (_label, config, gold, output, expected) => {
    expect(contains(config)({ answer: gold as string }, output)).toBe(expected);
  });

  it('an empty gold is a CallerError, not a free 1', () => {
    expect(callerError(() => contains()({ answer: '  ' }, 'anything')).message).toMatch(/task\.answer is empty/);
  });

  it('refuses bad config', () => {
    expect(callerError(() => contains({ goldKey: '' })).message).toMatch(/^contains: config\.goldKey must be a non-empty string/);
  });
});

describe('regex', () => {
  const cases: Array<[string, { pattern: string; flags?: string }, unknown, 0 | 1]> = [
    ['matches anywhere', { pattern: 'Answer: \\d+' }, 'work...\nAnswer: 12\n', 1],
    ['anchored whole match', { pattern: '^Answer: 12$' }, 'Answer: 12 apples', 0],
    ['multiline anchors', { pattern: '^Answer: 12$', flags: 'm' }, 'work\nAnswer: 12\nmore', 1],
    ['case-insensitive flag', { pattern: 'answer', flags: 'i' }, 'ANSWER', 1],
    ['no match', { pattern: 'x{3}' }, 'xx', 0],
    ['stdout of a code run', { pattern: '^ok$' }, { stdout: 'ok' }, 1],
  ];
  it.each(cases)('%s', (_label, config, output, expected) => {
    expect(regex(config)({}, output)).toBe(expected);
  });

  it('scores the same output the same way on every call', () => {
    const reward = regex({ pattern: 'a' });
    expect([reward({}, 'a'), reward({}, 'a'), reward({}, 'a')]).toEqual([1, 1, 1]);
  });

  const bad: Array<[unknown, RegExp]> = [
    [{ pattern: '(' }, /config\.pattern "\(" with flags "" is not a valid regular expression: .*Unterminated group/],
    [{ pattern: '' }, /config\.pattern must be a non-empty regular expression/],
    [{}, /config\.pattern must be .*got undefined/],
    [undefined, /config\.pattern must be .*got undefined/],
    [{ pattern: 'a', flags: 'g' }, /config\.flags must be a string of distinct flags from "dimsuv" \(g and y are refused/],
    [{ pattern: 'a', flags: 'ii' }, /config\.flags/],
    [{ pattern: 'a', flags: 'uv' }, /is not a valid regular expression/],
    [{ pattern: 'a', flag: 'i' }, /config\.flag is not an option; allowed options are pattern, flags/],
  ];
  it.each(bad)('refuses config %j at factory time', (config, message) => {
    const err = callerError(() => regex(config as never));
    expect(err.message).toMatch(/^regex: /);
    expect(err.message).toMatch(message);
  });
});
