import { describe, expect, it } from 'vitest';
import { closestKey, levenshtein } from '../../../src/spec/closest-key.js';

describe('closestKey', () => {
  it.each([
    ['a misspelling', 'answr', ['id', 'question', 'answer'], 'answer'],
    ['two edits', 'anwser', ['id', 'answer'], 'answer'],
    ['another letter case', 'Answer', ['id', 'answer'], 'answer'],
    ['letter case wins over a nearer edit', 'label', ['lapel', 'LABEL'], 'LABEL'],
    ['the nearest of several', 'gold', ['golds', 'goal', 'old'], 'golds'],
    ['nothing close', 'answer', ['id', 'question'], undefined],
    ['three edits is too far', 'answer', ['ans'], undefined],
    ['a short key allows less', 'x', ['id'], undefined],
    ['no keys', 'answer', [], undefined],
    ['never the key itself', 'answer', ['answer'], undefined],
  ] as Array<[string, string, string[], string | undefined]>)('%s', (_label, wanted, keys, expected) => {
    expect(closestKey(wanted, keys)).toBe(expected);
  });
});

describe('levenshtein', () => {
  it('counts inserts, deletes and substitutions', () => {
    expect(levenshtein('answr', 'answer')).toBe(1);
    expect(levenshtein('kitten', 'sitting')).toBe(3);
    expect(levenshtein('', 'abc')).toBe(3);
    expect(levenshtein('same', 'same')).toBe(0);
  });
});
