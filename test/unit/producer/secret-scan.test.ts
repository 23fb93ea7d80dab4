import { describe, expect, it } from 'vitest';
import { SecretScan } from '../../../src/producer/find-leaked-secret.js';
import { prepareDraft } from '../../../src/producer/rollout-draft.js';

const draft = (task: Record<string, unknown>, sandbox?: Record<string, unknown>): Record<string, unknown> => ({
  rendered: 'x', task, run: { $ref: 'pkg/mod:run', config: {} }, reward: { $ref: 'pkg/mod:reward', config: {} }, ...(sandbox ? { sandbox } : {}),
});
const ctx = { runId: 'run-1', runAttemptId: 'attempt', index: 0, maxSpecBytes: 1 << 20, maxTaskBytes: 1 << 16 };

describe('SecretScan', () => {
  const env = { API_TOKEN: 'tok-12345678', SHORT_KEY: 'abc', PLAIN: 'not-secret-value', LISTED: 'listed"value', OTHER: 'x' };

  it('names a secret-looking variable whose raw or JSON-escaped value is in the spec, never a short or ordinary one', () => {
    const scan = new SecretScan(env);
    expect(scan.find(JSON.stringify({ a: 'has tok-12345678 inside' }), [])).toBe('API_TOKEN');
    expect(scan.find(JSON.stringify({ a: 'abc not-secret-value' }), [])).toBeUndefined();
  });

  it('checks the variables a spec lists in sandbox.env, in their JSON-escaped form too', () => {
    const scan = new SecretScan(env);
    expect(scan.find(JSON.stringify({ a: 'listed"value' }), ['LISTED'])).toBe('LISTED');
    expect(scan.find(JSON.stringify({ a: 'listed"value' }), [])).toBeUndefined();
    expect(scan.find(JSON.stringify({ a: 'x' }), ['OTHER', 'UNSET'])).toBeUndefined();
  });

  it('reads the secret-looking variables when made: one scan serves a whole batch of drafts', () => {
    const live: Record<string, string> = {};
    const scan = new SecretScan(live);
    live.LATE_SECRET = 'late-secret-value';
    expect(scan.find('"late-secret-value"', [])).toBeUndefined();
    expect(new SecretScan(live).find('"late-secret-value"', [])).toBe('LATE_SECRET');
  });
});

describe('prepareDraft with a shared scan', () => {
  it('refuses a draft carrying a secret value as SecretInSpec, naming the variable only', () => {
    const secrets = new SecretScan({ DB_PASSWORD: 'hunter2-hunter2' });
    const prepared = prepareDraft(draft({ id: 't', note: 'hunter2-hunter2' }), { ...ctx, secrets });
    expect(prepared).toMatchObject({ ok: false, error: { type: 'SecretInSpec' } });
    expect(JSON.stringify(prepared)).not.toContain('hunter2-hunter2');
    expect(prepareDraft(draft({ id: 't' }), { ...ctx, secrets })).toMatchObject({ ok: true, leaseId: 'run-1.t' });
  });

  it('tells a draft that lists the variable in sandbox.env already to take the value out, not to list it (fresh-user input)', () => {
    const secrets = new SecretScan({ MY_SECRET: 'hunter2value' });
    const listed = prepareDraft(draft({ id: 't', note: 'the answer is hunter2value' }, { env: ['MY_SECRET'] }), { ...ctx, secrets });
    expect(listed).toMatchObject({ ok: false, error: { type: 'SecretInSpec' } });
    const message = (listed as { error: { message: string } }).error.message;
    expect(message).toContain('take the value out of the draft');
    expect(message).toContain('ctx.secrets.MY_SECRET');
    expect(message).not.toContain('hunter2value');
    const unlisted = prepareDraft(draft({ id: 't', note: 'the answer is hunter2value' }), { ...ctx, secrets: new SecretScan({ MY_SECRET: 'hunter2value' }) });
    expect((unlisted as { error: { message: string } }).error.message).toContain('list "MY_SECRET" in sandbox.env');
  });

  it('measures the spec once: bytes is its UTF-8 size, and an oversize task or spec is refused by name', () => {
    const ok = prepareDraft(draft({ id: 't', text: 'é' }), ctx);
    expect(ok.ok && ok.bytes).toBe(ok.ok ? Buffer.byteLength(JSON.stringify(ok.spec), 'utf8') : -1);
    const big = { id: 't', text: 'y'.repeat(200) };
    expect(prepareDraft(draft(big), { ...ctx, maxTaskBytes: 100 })).toMatchObject({ ok: false, error: { message: expect.stringMatching(/task is \d+ bytes as JSON, over maxTaskBytes 100/) } });
    expect(prepareDraft(draft(big), { ...ctx, maxSpecBytes: 200 })).toMatchObject({ ok: false, error: { message: expect.stringMatching(/spec is \d+ bytes as JSON, over maxSpecBytes 200/) } });
    // A spec over maxTaskBytes whose task is within it passes.
    expect(prepareDraft(draft({ id: 't' }), { ...ctx, maxTaskBytes: 30 })).toMatchObject({ ok: true });
  });
});
