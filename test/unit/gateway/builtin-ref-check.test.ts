import { describe, expect, it } from 'vitest';
import { builtinRefRefusal } from '../../../src/gateway/builtin-ref-check.js';

const reward = { $ref: 'rollout-queue/rewards:lastNumber', config: {} };
const run = { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.py' } };
const draft = (over: Record<string, unknown>): Record<string, unknown> => ({ rendered: 'print(4)', task: { id: 't', answer: 4 }, run, reward, ...over });

describe('builtinRefRefusal: what the workers would refuse about a draft\'s built-in Refs', () => {
  it('passes a good draft, and Refs of the user\'s own modules whatever their config', () => {
    expect(builtinRefRefusal(draft({}))).toBeUndefined();
    expect(builtinRefRefusal(draft({ run: { $ref: 'my-evals:solve', config: { entrypiont: 1 } }, reward: { $ref: 'my-evals:score', config: {} }, task: { id: 't' } }))).toBeUndefined();
  });

  it('names the field: a misspelt codeRunner option, another runner export', () => {
    expect(builtinRefRefusal(draft({ run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypiont: 'main.py' } } }))).toMatchObject({ field: 'run.config', message: expect.stringContaining('entrypiont') });
    expect(builtinRefRefusal(draft({ run: { $ref: 'rollout-queue/runners:pythonRunner', config: {} } }))).toMatchObject({ field: 'run.$ref', message: expect.stringContaining('rollout-queue/runners:codeRunner') });
    // Model-written files without the entrypoint are the model's (model/BadRenderedFile on the worker).
    expect(builtinRefRefusal(draft({ rendered: { files: { 'solve.py': 'print(4)' } } }))).toBeUndefined();
  });

  it('names the field: another reward export, a config its factory refuses, a gold answer the task lacks (with the close key)', () => {
    expect(builtinRefRefusal(draft({ reward: { $ref: 'rollout-queue/rewards:lastNumbr', config: {} } }))).toMatchObject({ field: 'reward.$ref', message: expect.stringContaining('lastNumber') });
    expect(builtinRefRefusal(draft({ reward: { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKy: 'x' } } }))).toMatchObject({ field: 'reward.config', message: expect.stringContaining('goldKy') });
    expect(builtinRefRefusal(draft({ task: { id: 't', Answer: 4 } }))).toEqual({ field: 'task.answer', message: 'rollout-queue/rewards:lastNumber reads the gold answer at task.answer, which this task does not have (its keys: id, Answer); did you mean reward.config {"goldKey": "Answer"}?' });
    expect(builtinRefRefusal(draft({ task: { id: 't', answer: { value: 4 } } }))).toMatchObject({ field: 'task.answer' });
  });
});
