// A draft's `meta`: the caller's tag, validated with the spec, returned untouched on its Result.
import { describe, expect, it } from 'vitest';
import { prepareDraft } from '../../../src/producer/rollout-draft.js';
import { metaOfJobData, withMeta } from '../../../src/producer/result-meta.js';
import { resultForMissingJob, resultFromFailedJob, resultFromReturnValue } from '../../../src/producer/result-from-job.js';
import { MAX_META_BYTES, parseResult, parseRolloutSpec, ResultSchema, RolloutSpecSchema, type Result } from '../../../src/spec/index.js';
import { issuePaths, rawSpec } from './spec-fixture.js';

const ctx = { runId: 'run-1', runAttemptId: 'attempt', index: 0, maxSpecBytes: 1 << 20, maxTaskBytes: 1 << 16 };
const draft = (meta: unknown, task: Record<string, unknown> = { id: 't1' }): Record<string, unknown> => ({
  rendered: 'x', task, run: { $ref: 'pkg/mod:run', config: {} }, reward: { $ref: 'pkg/mod:reward', config: {} }, meta,
});

describe('meta on a spec', () => {
  it.each([
    ['an object', { candidate: 7, generation: 2, parents: [3, 4], label: 'mutant' }],
    ['a string', 'cand-7'],
    ['a number', 7],
    ['null', null],
    ['an array of objects', [{ id: 1 }, { id: 2 }]],
  ])('accepts %s, and a parse returns it unchanged, on the template path and through zod', (_name, meta) => {
    const raw = rawSpec({ meta });
    const zod = RolloutSpecSchema.parse(raw);
    expect(zod.meta).toStrictEqual(meta);
    // The same run's specs again (the template path): each spec gets its own meta back.
    for (let i = 0; i < 3; i++) {
      const own = typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? { ...meta, i } : meta;
      const parsed = parseRolloutSpec({ ...raw, leaseId: `run-1.t-${i}`, task: { id: `t-${i}` }, meta: own });
      expect(parsed.success).toBe(true);
      expect(parsed.data?.meta).toStrictEqual(own);
      expect(JSON.stringify(parsed.data)).toBe(JSON.stringify(RolloutSpecSchema.parse({ ...raw, leaseId: `run-1.t-${i}`, task: { id: `t-${i}` }, meta: own })));
    }
  });

  it('is absent from the parsed spec when the draft has none', () => {
    const parsed = parseRolloutSpec(rawSpec());
    expect(parsed.success && 'meta' in parsed.data).toBe(false);
  });

  it.each([
    ['over the byte limit', { blob: 'x'.repeat(MAX_META_BYTES) }, /meta is \d+ bytes as JSON, over the 4096-byte limit; keep meta a small tag/],
    ['a function', { f: () => 1 }, /meta\.f: got function/],
    ['NaN', { score: Number.NaN }, /meta\.score: got NaN/],
    ['a __proto__ key', JSON.parse('{"__proto__": {"x": 1}}') as unknown, /meta\.__proto__: key "__proto__" is not allowed/],
    ['too deep', { a: { b: { c: { d: { e: { f: { g: { h: { i: { j: 1 } } } } } } } } } }, /nesting deeper than 8 levels/],
  ])('refuses meta %s, naming the field and the fix, also after good specs of the same run', (_name, meta, message) => {
    expect(parseRolloutSpec(rawSpec({ meta: 'ok' })).success).toBe(true);
    const parsed = parseRolloutSpec(rawSpec({ meta }));
    expect(issuePaths(parsed)).toEqual(['meta']);
    expect(parsed.error?.issues[0]?.message).toMatch(message);
  });
});

describe('meta on a Result', () => {
  const written = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    leaseId: 'run-1.t-1', runId: 'run-1', taskId: 't-1', kind: 'ok', output: 1, reward: 1, error: null,
    attempts: 1, redispatched: 0, worker: 'w-1', queuedMs: 3, runMs: 1, finishedAt: '2026-01-01T00:00:00.000Z', cost: [], ...extra,
  });

  it('survives parseResult unchanged (the fast path gives zod\'s answer, key order included)', () => {
    for (const value of [written({ meta: { candidate: 3 } }), written({ cached: true, meta: 'x' }), written({ meta: null }), written()]) {
      const ours = parseResult(value);
      const zod = ResultSchema.safeParse(value);
      expect(ours.success && zod.success).toBe(true);
      expect(JSON.stringify(ours.data)).toBe(JSON.stringify(zod.data));
    }
    expect(parseResult(written({ meta: { candidate: 3 } })).data?.meta).toEqual({ candidate: 3 });
  });

  it('is the worker\'s Result\'s own through resultFromReturnValue', () => {
    expect(resultFromReturnValue('run-1.t-1', 'run-1', written({ meta: { k: 1 } })).meta).toEqual({ k: 1 });
  });

  it('is set on the Results the producer writes: a failed job\'s (from its data), a missing job\'s (from the kept draft)', () => {
    const failed = resultFromFailedJob('run-1.t-1', 'run-1', {
      state: 'failed', failedReason: 'job stalled more than allowable limit', attemptsStarted: 3, stalledCounter: 3, leaseRedispatched: 2,
      timestamp: null, processedOn: null, finishedOn: null, processedBy: null, taskId: 't-1', meta: metaOfJobData(JSON.stringify(rawSpec({ meta: { k: 2 } }))),
    });
    expect(failed).toMatchObject({ kind: 'infrastructure', meta: { k: 2 } });
    expect(resultForMissingJob('run-1.t-1', 'run-1', 'q', { k: 3 }).meta).toEqual({ k: 3 });
    expect('meta' in resultForMissingJob('run-1.t-1', 'run-1', 'q')).toBe(false);
  });

  it('metaOfJobData reads only valid meta; withMeta removes another draft\'s meta', () => {
    expect(metaOfJobData(null)).toBeUndefined();
    expect(metaOfJobData('not json')).toBeUndefined();
    expect(metaOfJobData(JSON.stringify({ meta: { blob: 'x'.repeat(MAX_META_BYTES) } }))).toBeUndefined();
    const cached = { ...(written({ meta: 'earlier draft' }) as unknown as Result) };
    expect('meta' in withMeta(cached, undefined)).toBe(false);
    expect(withMeta(cached, 'this draft').meta).toBe('this draft');
  });
});

describe('meta of a refused draft', () => {
  it('rides on the refusal, so its caller Result is matched like any other', () => {
    const prepared = prepareDraft(draft({ candidate: 9 }, { id: 't1', bad: Number.POSITIVE_INFINITY }), ctx);
    expect(prepared).toMatchObject({ ok: false, error: { type: 'InvalidSpec' }, meta: { candidate: 9 } });
  });

  it('is refused by its own field name, and then not carried', () => {
    const prepared = prepareDraft(draft({ blob: 'x'.repeat(MAX_META_BYTES) }), ctx);
    expect(prepared.ok).toBe(false);
    expect(prepared.ok ? '' : prepared.error.message).toMatch(/spec field "meta": meta: meta is \d+ bytes as JSON, over the 4096-byte limit/);
    expect('meta' in prepared).toBe(false);
  });

  it('is never carried by a SecretInSpec refusal (the secret may be in the meta)', () => {
    process.env.RQ_META_TEST_API_KEY = 'sk-meta-secret-0123456789abcdef';
    try {
      const prepared = prepareDraft(draft({ key: 'sk-meta-secret-0123456789abcdef' }), ctx);
      expect(prepared).toMatchObject({ ok: false, error: { type: 'SecretInSpec' } });
      expect(JSON.stringify(prepared)).not.toContain('sk-meta-secret');
    } finally {
      delete process.env.RQ_META_TEST_API_KEY;
    }
  });
});
