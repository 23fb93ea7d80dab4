import { describe, expect, it } from 'vitest';
import * as builtinRewards from '../../../src/rewards/index.js';
import { goldProblem, readGold } from '../../../src/rewards/gold.js';
import { DEFAULT_GOLD_KEY, goldKeyOf } from '../../../src/rewards/gold-key.js';
import { CallerError } from '../../../src/spec/errors.js';
import { callerError } from '../../helpers/caller-error.js';

const TASK = { id: 'arith-0001', question: 'What is 1+2?', answer: 3 };

describe('readGold', () => {
  it('returns a string, finite number or boolean gold', () => {
    expect(readGold('f', TASK, 'answer')).toBe(3);
    expect(readGold('f', { a: 'x' }, 'a')).toBe('x');
    expect(readGold('f', { a: false }, 'a')).toBe(false);
  });

  // Fresh-user report: "goldKey":"answr" told them to add "answr" to 240 tasks holding "answer".
  it('names a close task key as "did you mean" before adding the field', () => {
    const err = callerError(() => readGold('lastNumber', TASK, 'answr'));
    expect(err).toBeInstanceOf(CallerError);
    expect(err.message).toBe(
      'lastNumber: the task has no gold answer at task.answr (task keys: id, question, answer); did you mean "answer"? set config.goldKey to it, or add "answr" to every task',
    );
  });

  it('suggests a key that differs only in letter case', () => {
    expect(callerError(() => readGold('exactMatch', { id: 1, Label: 'x' }, 'label')).message).toContain('did you mean "Label"?');
  });

  it('keeps the plain fix when no key is close', () => {
    const err = callerError(() => readGold('contains', { id: 't', question: 'q' }, 'answer'));
    expect(err.message).toBe(
      'contains: the task has no gold answer at task.answer (task keys: id, question); add "answer" to every task or set config.goldKey to the key that holds the answer',
    );
  });

  it('refuses an object or array gold', () => {
    expect(callerError(() => readGold('f', { answer: { v: 1 } }, 'answer')).message).toMatch(/task\.answer must be a string, number or boolean, got an object/);
    expect(callerError(() => readGold('f', { answer: [1, 2] }, 'answer')).message).toMatch(/got an array of 2/);
  });
});

describe('goldProblem', () => {
  it('is undefined for a usable gold, missing (with the close key) or type otherwise', () => {
    expect(goldProblem(TASK, 'answer')).toBeUndefined();
    expect(goldProblem(TASK, 'answr')).toEqual({ kind: 'missing', keys: ['id', 'question', 'answer'], suggestion: 'answer' });
    expect(goldProblem({ id: 'x3', question: 'q' }, 'answer')).toEqual({ kind: 'missing', keys: ['id', 'question'] });
    expect(goldProblem({ answer: null }, 'answer')).toMatchObject({ kind: 'missing' });
    expect(goldProblem({ answer: [] }, 'answer')).toEqual({ kind: 'type', value: [] });
  });
});

describe('goldKeyOf', () => {
  it('reads config.goldKey, else the default, for the rewards that read a gold answer only', () => {
    expect(goldKeyOf('lastNumber', {})).toBe('answer');
    expect(goldKeyOf('exactMatch', { goldKey: 'label' })).toBe('label');
    expect(goldKeyOf('regex', { pattern: 'x' })).toBeUndefined();
    expect(goldKeyOf('answerText', {})).toBeUndefined();
    expect(goldKeyOf('nope', {})).toBeUndefined();
  });

  // The list in gold-key.ts must match what the factories do: each export is run on a task
  // without any field, and whether (and where) it looks for a gold answer is read off its error.
  it('matches every built-in reward factory', () => {
    const configs: Record<string, unknown> = { regex: { pattern: 'x' } };
    for (const [name, factory] of Object.entries(builtinRewards)) {
      if (name === 'answerText') continue;
      if (name === 'command') {
        // Runs a judge program: whether that needs a gold answer is the judge's business, so the
        // CLI's check before enqueueing leaves it out.
        expect(goldKeyOf(name, { command: ['python3', 'judge.py'] }), name).toBeUndefined();
        continue;
      }
      const fn = (factory as (config: unknown) => (task: object, output: unknown) => unknown)(configs[name]);
      let message = '';
      try {
        fn({}, 'Answer: 1');
      } catch (err) {
        message = (err as Error).message;
      }
      const reads = message.includes('no gold answer');
      expect(goldKeyOf(name, {}), name).toBe(reads ? DEFAULT_GOLD_KEY : undefined);
      if (reads) expect(message, name).toContain(`task.${DEFAULT_GOLD_KEY}`);
    }
  });
});
