import { describe, expect, it } from 'vitest';
import { checkBuiltinRewardGold } from '../../../src/cli/check-gold.js';
import { UsageError } from '../../../src/cli/errors.js';
import type { TaskLine } from '../../../src/cli/tasks-file.js';

const lines = (...tasks: Array<Record<string, unknown>>): TaskLine[] => tasks.map((task, i) => ({ taskKey: i + 1, task: task as TaskLine['task'], line: i + 1 }));
const good = lines({ id: 'x1', question: 'What is 1+1?', answer: 2 }, { id: 'x2', question: 'What is 2+2?', answer: 4 });
const reward = (name: string, config: Record<string, unknown> = {}) => ({ $ref: `rollout-queue/rewards:${name}`, config });

/** The UsageError `checkBuiltinRewardGold` throws (failing the test when it does not). */
function refusal(tasks: readonly TaskLine[], ref: ReturnType<typeof reward>): string {
  let thrown: unknown;
  try {
    checkBuiltinRewardGold('tasks.jsonl', tasks, ref);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(UsageError);
  return (thrown as Error).message;
}

describe('checkBuiltinRewardGold (run, before anything is enqueued)', () => {
  it('passes tasks that all hold the gold answer', () => {
    for (const name of ['lastNumber', 'exactMatch', 'contains']) expect(() => checkBuiltinRewardGold('tasks.jsonl', good, reward(name))).not.toThrow();
    expect(() => checkBuiltinRewardGold('tasks.jsonl', lines({ id: 'a', label: 'x' }), reward('exactMatch', { goldKey: 'label' }))).not.toThrow();
  });

  // Fresh-user report 1: "goldKey":"answr" over 240 tasks with "answer".
  it('names a misspelt goldKey at the first line, with "did you mean" and the --reward-config that fixes it', () => {
    expect(refusal(good, reward('lastNumber', { goldKey: 'answr' }))).toBe(
      `tasks.jsonl:1: --reward rollout-queue/rewards:lastNumber reads the gold answer at task.answr, and this task has no "answr" ` +
        `(task keys: id, question, answer; all 2 tasks lack it); did you mean "answer"? pass --reward-config '{"goldKey":"answer"}', or add "answr" to every task. Nothing was enqueued.`,
    );
  });

  it('keeps the other options in the suggested --reward-config', () => {
    expect(refusal(good, reward('lastNumber', { tolerance: 0.01, goldKey: 'Answer' }))).toContain(`pass --reward-config '{"tolerance":0.01,"goldKey":"answer"}'`);
  });

  // Fresh-user report 2: one task of three without "answer", default goldKey.
  it('names the one line without the default "answer"', () => {
    const tasks = [...good, { taskKey: 'x3', task: { id: 'x3', question: 'What is 1+2?' }, line: 3 }];
    expect(refusal(tasks, reward('lastNumber'))).toBe(
      'tasks.jsonl:3: --reward rollout-queue/rewards:lastNumber reads the gold answer at task.answer, and this task has no "answer" ' +
        '(task keys: id, question; 1 of 3 tasks lack it); add "answer" to this task. Nothing was enqueued.',
    );
  });

  it('offers the config fix when no task holds the key and none is close', () => {
    expect(refusal(lines({ id: 'a', solution: 1 }), reward('contains'))).toContain(
      `add "answer" to every task, or pass --reward-config '{"goldKey":"KEY"}' with the key that holds the answer. Nothing was enqueued.`,
    );
  });

  // Fresh-user report (helper-33): one task of two misspelt its key; the suggested goldKey would
  // have broken the other line.
  it('where other tasks hold the key, names the task\'s own misspelling, not another goldKey', () => {
    expect(refusal(lines({ id: 'a', answer: 1 }, { id: 'b', answr: 2 }), reward('lastNumber'))).toBe(
      'tasks.jsonl:2: --reward rollout-queue/rewards:lastNumber reads the gold answer at task.answer, and this task has no "answer" ' +
        '(task keys: id, answr; 1 of 2 tasks lack it); rename "answr" to "answer" in this task, or add "answer" to this task. Nothing was enqueued.',
    );
  });

  // Fresh-user report (helper-33): a null gold said `add "answer" to every task` of a task that has it.
  it('asks a value for a null gold, not to add the key', () => {
    expect(refusal(lines({ id: 'a', answer: null }), reward('exactMatch'))).toBe(
      'tasks.jsonl:1: --reward rollout-queue/rewards:exactMatch reads the gold answer at task.answer, and this task\'s "answer" is null ' +
        '(task keys: id, answer); give "answer" a string, number or boolean in every task. Nothing was enqueued.',
    );
  });

  it('says a null gold is null', () => {
    expect(refusal(lines({ id: 'a', answer: null }), reward('exactMatch'))).toContain(`tasks.jsonl:1: --reward rollout-queue/rewards:exactMatch reads the gold answer at task.answer, and this task's "answer" is null`);
  });

  it('refuses an object or array gold, naming the line', () => {
    expect(refusal(lines({ id: 'a', answer: 1 }, { id: 'b', answer: [1, 2] }), reward('exactMatch'))).toBe(
      'tasks.jsonl:2: --reward rollout-queue/rewards:exactMatch reads the gold answer at task.answer, which holds an array of 2; it must be a string, number or boolean: put the answer there as text. Nothing was enqueued.',
    );
    expect(refusal(lines({ id: 'a', answer: { v: 1 } }), reward('contains'))).toContain('which holds an object');
  });

  // A text answer under lastNumber ended its lease caller on the worker, after enqueueing.
  it('refuses a gold answer lastNumber cannot read a number from, and lets exactMatch have it', () => {
    const text = lines({ id: 'a', answer: '1,234' }, { id: 'b', answer: 'forty-two' });
    expect(refusal(text, reward('lastNumber'))).toBe(
      'tasks.jsonl:2: --reward rollout-queue/rewards:lastNumber compares numbers, and task.answer is "forty-two" (string); put a number there (or a numeric string like "1,234"), or use --reward rollout-queue/rewards:exactMatch or :contains for text answers. Nothing was enqueued.',
    );
    expect(() => checkBuiltinRewardGold('tasks.jsonl', text, reward('exactMatch'))).not.toThrow();
  });

  it('does not inspect a reward that reads no gold answer, or a reward of another module', () => {
    const bare = lines({ id: 'a' });
    expect(() => checkBuiltinRewardGold('tasks.jsonl', bare, reward('regex', { pattern: 'x' }))).not.toThrow();
    expect(() => checkBuiltinRewardGold('tasks.jsonl', bare, { $ref: 'my-rewards:lastNumber', config: { goldKey: 'answr' } })).not.toThrow();
  });
});
