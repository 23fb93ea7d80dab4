import { describe, expect, it } from 'vitest';
import { firstRefusedDraft, prepareDraft } from '../../../src/producer/rollout-draft.js';

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

describe('prepareDraft: a bad file inside rendered.files is the model\'s (BadRenderedFile), not the caller\'s', () => {
  const refs = { run: { $ref: 'pkg/mod:run', config: {} }, reward: { $ref: 'pkg/mod:reward', config: {} } };
  // Fresh-user report: in RL/evolution `rendered` comes from the model; a bad file there ended
  // `caller` and stopped the run. Only what the spec schema checks is the producer's to see.
  it.each([
    ['a content that is not text', { 'main.py': 'print(42)', 'data.bin': 5 }, 'rendered.files entry #1 (of 2) is not text (number)'],
    ['an empty path', { '': 'x', 'main.py': 'print(42)' }, 'rendered.files entry #0 (of 2) has an empty path'],
    ['a path over 512 characters', { 'main.py': 'print(42)', ['a'.repeat(600)]: 'x' }, 'rendered.files entry #1 (of 2) has a path of 600 characters, over 512'],
  ])('refuses %s as a model refusal naming the entry by position, never its path or content', (_label, files, message) => {
    const prepared = prepareDraft({ rendered: { files }, task: { id: 't' }, ...refs }, ctx);
    expect(prepared).toMatchObject({ ok: false, kind: 'model', leaseId: 'run-1.t', error: { type: 'BadRenderedFile', message: expect.stringContaining(message) } });
    expect(prepared.ok ? '' : prepared.error.message).not.toContain('aaaaaaaa');
  });

  it('passes "../evil.py" through (path rules are the runner\'s: codeRunner ends it BadRenderedFile)', () => {
    const prepared = prepareDraft({ rendered: { files: { 'main.py': 'print(42)', '../evil.py': 'x' } }, task: { id: 't' }, ...refs }, ctx);
    expect(prepared.ok).toBe(true);
  });

  it('a caller fault elsewhere in the spec still wins: caller InvalidSpec', () => {
    const prepared = prepareDraft({ rendered: { files: { 'main.py': 5 } }, task: { id: 't' }, run: { $ref: 'no-colon', config: {} }, reward: refs.reward }, ctx);
    expect(prepared).toMatchObject({ ok: false, kind: 'caller', error: { type: 'InvalidSpec' } });
  });

  it('firstRefusedDraft (the gateway\'s POST /runs 400) skips it: the others run, it ends model', () => {
    const drafts = [{ rendered: { files: { 'main.py': 5 } }, task: { id: 'a' }, ...refs }, { rendered: 'x', task: { id: 'b' }, ...refs }];
    expect(firstRefusedDraft('run-1', drafts, { maxSpecBytes: 1 << 20, maxTaskBytes: 1 << 16 })).toBeUndefined();
  });
});
