import { describe, expect, it } from 'vitest';
import { goldKeysOf, taskForRun } from '../../../src/consumer/task-for-run.js';
import { contains, exactMatch, lastNumber, regex } from '../../../src/rewards/index.js';
import { CallerError, withGoldKeys, type Ref, type Task } from '../../../src/spec/index.js';

/** BR-61's first task, as its tasks.jsonl holds it. */
const BR61_TASK: Task = { id: 'q1', question: 'What is 17 * 23?', answer: 391 };

const rewardRef = (target: string, config: Record<string, unknown> = {}): Ref => ({ $ref: target, config });

describe('the task the run receives (taskForRun)', () => {
  it("BR-61: lastNumber's default goldKey is kept from the run; the spec's task keeps it for the reward", () => {
    const spec = { task: BR61_TASK, reward: rewardRef('rollout-queue/rewards:lastNumber', { goldKey: 'answer' }) };
    const view = taskForRun(spec, lastNumber({ goldKey: 'answer' }));
    expect(view.task).toEqual({ id: 'q1', question: 'What is 17 * 23?' });
    expect(view.goldKeys).toEqual(['answer']);
    expect(spec.task).toEqual(BR61_TASK);
  });

  it('a built-in reward without config still declares its default key (its Ref config names none)', () => {
    const view = taskForRun({ task: BR61_TASK, reward: rewardRef('rollout-queue/rewards:lastNumber') }, lastNumber());
    expect(view.task).not.toHaveProperty('answer');
  });

  it("each built-in reward's goldKey, read from the function it resolved to", () => {
    const task = { id: 't', question: 'q', expected: 'Paris', hint: 'a city' };
    expect(taskForRun({ task, reward: rewardRef('rollout-queue/rewards:exactMatch', { goldKey: 'expected' }) }, exactMatch({ goldKey: 'expected' })).task).toEqual({ id: 't', question: 'q', hint: 'a city' });
    expect(taskForRun({ task, reward: rewardRef('rollout-queue/rewards:contains', { goldKey: 'hint' }) }, contains({ goldKey: 'hint' })).task).toEqual({ id: 't', question: 'q', expected: 'Paris' });
  });

  it('a reward that reads no gold (regex) leaves the task as it is: the same object, nothing copied', () => {
    const view = taskForRun({ task: BR61_TASK, reward: rewardRef('rollout-queue/rewards:regex', { pattern: '^\\d+$' }) }, regex({ pattern: '^\\d+$' }));
    expect(view.task).toBe(BR61_TASK);
    expect(view.goldKeys).toEqual([]);
  });

  it("the engine's gold_key convention, in the reward's config and in nested Refs at any depth", () => {
    const task = { id: 't', prompt: 'p', gold: 7, reference: 'r', rubric: 'x' };
    const reward = rewardRef('agentdescent/rewards:judged', {
      gold_key: 'gold',
      judge: { $ref: 'agentdescent/agents:claude', config: { model: 'm', grader: { $ref: 'agentdescent/rewards:rubric', config: { gold_keys: ['rubric'], goldKey: 'reference' } } } },
    });
    const view = taskForRun({ task, reward }, () => 1);
    expect(view.goldKeys).toEqual(['gold', 'reference', 'rubric']);
    expect(view.task).toEqual({ id: 't', prompt: 'p' });
  });

  it('a key the resolved reward function declares at run time (goldKeys)', () => {
    const judge = withGoldKeys(() => 1, ['solution']);
    const view = taskForRun({ task: { id: 't', solution: 's', code: 'c' }, reward: rewardRef('acme/rewards:judge') }, judge);
    expect(view.task).toEqual({ id: 't', code: 'c' });
  });

  it("the spec's own goldKeys, joined with the reward's, each key once", () => {
    const spec = { task: { id: 't', question: 'q', answer: 1, notes: 'n', tests: 't' }, reward: rewardRef('rollout-queue/rewards:lastNumber', { goldKey: 'answer' }), goldKeys: ['tests', 'answer', 'notes'] };
    expect(goldKeysOf(spec, lastNumber())).toEqual(['answer', 'tests', 'notes']);
    expect(taskForRun(spec, lastNumber()).task).toEqual({ id: 't', question: 'q' });
  });

  it('goldVisibleToRun: the run gets the whole task, nothing removed, ctx.goldKeys empty', () => {
    const spec = { task: BR61_TASK, reward: rewardRef('rollout-queue/rewards:lastNumber'), goldKeys: ['question'], goldVisibleToRun: true };
    const view = taskForRun(spec, lastNumber());
    expect(view.task).toBe(BR61_TASK);
    expect(view.goldKeys).toEqual([]);
  });

  it('goldVisibleToRun false is the default', () => {
    expect(taskForRun({ task: BR61_TASK, reward: rewardRef('m:e'), goldVisibleToRun: false }, lastNumber()).task).not.toHaveProperty('answer');
  });

  it('a reward declaring goldKeys that name no task key is a caller error, before the run', () => {
    const bad = Object.assign(() => 1, { goldKeys: 42 });
    expect(() => taskForRun({ task: BR61_TASK, reward: rewardRef('acme/rewards:judge') }, bad)).toThrow(CallerError);
  });
});
