// ResultSchema and the results-file line layout.
import { describe, expect, it } from 'vitest';
import { RESULT_LINE_FIELDS, ResultKindSchema, ResultSchema, type Result } from '../../../src/spec/index.js';

const fullResult = (): Result => ({
  leaseId: 'run-1.task-1',
  runId: 'run-1',
  taskId: 'task-1',
  kind: 'ok',
  output: { text: 'the answer is 42', steps: [1, 2] },
  reward: 1,
  error: null,
  attempts: 2,
  redispatched: 1,
  worker: 'worker-a',
  queuedMs: 12.5,
  runMs: 340,
  finishedAt: '2026-11-29T10:00:00.000Z',
  cost: [{ id: 'receipt-1', usd: 0.0012, label: 'llm', units: { inputTokens: 1200, outputTokens: 80 } }],
});

describe('ResultSchema', () => {
  it('accepts a full Result unchanged', () => {
    expect(ResultSchema.parse(fullResult())).toStrictEqual(fullResult());
  });

  it('accepts every kind, with a failed kind carrying { type, message } and a null reward', () => {
    for (const kind of ResultKindSchema.options) {
      const result = { ...fullResult(), kind, reward: kind === 'ok' ? 0.5 : null, error: kind === 'ok' ? null : { type: 'RunThrew', message: 'boom' } };
      expect(ResultSchema.parse(result)).toStrictEqual(result);
    }
    expect(ResultKindSchema.options).toStrictEqual(['ok', 'model', 'infrastructure', 'caller']);
  });

  it('fills cost with [] when absent, and nulls the optional timings and worker', () => {
    const { cost: _cost, ...rest } = fullResult();
    const parsed = ResultSchema.parse({ ...rest, worker: null, queuedMs: null, runMs: null });
    expect(parsed.cost).toStrictEqual([]);
    expect(parsed.worker).toBeNull();
  });

  it.each([
    ['unknown kind', { kind: 'timeout' }, 'kind'],
    ['negative attempts', { attempts: -1 }, 'attempts'],
    ['fractional redispatched', { redispatched: 0.5 }, 'redispatched'],
    ['negative runMs', { runMs: -1 }, 'runMs'],
    ['error without type', { error: { message: 'x' } }, 'error.type'],
    ['error with an extra field', { error: { type: 'X', message: 'y', stack: 'at …' } }, 'error'],
    ['receipt with negative usd', { cost: [{ id: 'r', usd: -1 }] }, 'cost.0.usd'],
    ['unknown field', { secret: 'x' }, ''],
  ] as const)('refuses %s', (_name, overrides, path) => {
    const parsed = ResultSchema.safeParse({ ...fullResult(), ...overrides });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.path.join('.'))).toContain(path);
  });

  it('requires every line field (a Result never omits one)', () => {
    for (const field of RESULT_LINE_FIELDS) {
      if (field === 'output') continue; // z.unknown() also accepts an absent output (undefined)
      if (field === 'cost' || field === 'cached') continue; // optional/defaulted line fields since issue 9
      const result: Record<string, unknown> = { ...fullResult() };
      delete result[field];
      expect(ResultSchema.safeParse(result).success, field).toBe(false);
    }
  });
});

describe('RESULT_LINE_FIELDS', () => {
  it('is the 15 fields of a results line, in order (cost receipts and cached since issue 9)', () => {
    expect(RESULT_LINE_FIELDS).toStrictEqual([
      'leaseId', 'runId', 'taskId', 'kind', 'reward', 'output', 'error',
      'attempts', 'redispatched', 'worker', 'queuedMs', 'runMs', 'finishedAt', 'cost', 'cached',
    ]);
  });

  it('names only fields of the Result schema', () => {
    const shape = Object.keys(ResultSchema.shape);
    for (const field of RESULT_LINE_FIELDS) expect(shape).toContain(field);
    expect(shape.filter((field) => !(RESULT_LINE_FIELDS as readonly string[]).includes(field))).toStrictEqual([]);
  });
});
