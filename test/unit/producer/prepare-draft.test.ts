import { describe, expect, it } from 'vitest';
import { prepareDraft } from '../../../src/producer/rollout-draft.js';

const ctx = { runId: 'run-1', runAttemptId: 'attempt', index: 0, maxSpecBytes: 1 << 20, maxTaskBytes: 1 << 16 };

describe('prepareDraft: an empty task id', () => {
  // Fresh-user report (helper-30): the library said `task key is empty; give the task an "id" or
  // use its line number; …`: a library draft has no line number (that is the CLI's tasks file).
  it('says the fix in the library\'s terms: a non-empty taskKey or task.id, or neither (named by its position)', () => {
    const prepared = prepareDraft({ rendered: 'x', task: { id: '' }, run: { $ref: 'pkg/mod:run', config: {} }, reward: { $ref: 'pkg/mod:reward', config: {} } }, ctx);
    expect(prepared.ok).toBe(false);
    const message = prepared.ok ? '' : prepared.error.message;
    expect(message).toBe('draft #0: task key is empty; give the draft a non-empty taskKey or task.id, or leave both out and the task is named by its position');
  });
});
