// ResultSchema and the results-file line layout.
import { describe, expect, it } from 'vitest';
import { parseResult, RESULT_LINE_FIELDS, ResultKindSchema, ResultSchema, type Result } from '../../../src/spec/index.js';

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
      if (field === 'cost' || field === 'cached' || field === 'goldVisibleToRun' || field === 'meta' || field === 'rewardDetails') continue; // optional/defaulted line fields since issues 9, 28 and 30
      const result: Record<string, unknown> = { ...fullResult() };
      delete result[field];
      expect(ResultSchema.safeParse(result).success, field).toBe(false);
    }
  });
});

describe('RESULT_LINE_FIELDS', () => {
  it('is the 18 fields of a results line, in order (cost receipts and cached since issue 9, goldVisibleToRun since issue 28, meta and rewardDetails since issue 30)', () => {
    expect(RESULT_LINE_FIELDS).toStrictEqual([
      'leaseId', 'runId', 'taskId', 'kind', 'reward', 'output', 'error',
      'attempts', 'redispatched', 'worker', 'queuedMs', 'runMs', 'finishedAt', 'cost', 'cached', 'goldVisibleToRun', 'meta', 'rewardDetails',
    ]);
  });

  it('names only fields of the Result schema', () => {
    const shape = Object.keys(ResultSchema.shape);
    for (const field of RESULT_LINE_FIELDS) expect(shape).toContain(field);
    expect(shape.filter((field) => !(RESULT_LINE_FIELDS as readonly string[]).includes(field))).toStrictEqual([]);
  });
});

describe('parseResult', () => {
  const written = (): Record<string, unknown> => ({
    leaseId: 'run-1.t-1', runId: 'run-1', taskId: 't-1', kind: 'ok', output: { text: 'x', list: [1, 2] }, reward: 1, error: null,
    attempts: 1, redispatched: 0, worker: 'w-1', queuedMs: 3, runMs: 1, finishedAt: '2026-01-01T00:00:00.000Z', cost: [],
  });

  it('gives ResultSchema\'s answer, key order included, for the shapes workers write and for every odd one', () => {
    const cases: Record<string, unknown>[] = [
      written(),
      { ...written(), cached: true },
      { ...written(), goldVisibleToRun: false },
      { ...written(), goldVisibleToRun: true, cached: true },
      { ...written(), goldVisibleToRun: 'no' },
      { ...written(), goldVisibleToRun: undefined },
      { ...written(), rewardDetails: { got: 5, gold: 5 } },
      { ...written(), goldVisibleToRun: false, meta: { candidate: 1 }, rewardDetails: 'close' },
      { ...written(), rewardDetails: undefined },
      { ...written(), kind: 'model', reward: null, error: { type: 'RunThrew', message: 'boom' } },
      { ...written(), worker: null, queuedMs: null, runMs: null },
      { ...written(), reward: -0, queuedMs: 0 },
      { ...written(), output: undefined },
      { ...written(), cost: [{ id: 'c1', usd: 0.5 }] },
      { ...written(), cached: 'yes' },
      { ...written(), extra: 1 },
      { ...written(), kind: 'other' },
      { ...written(), reward: Number.NaN },
      { ...written(), reward: Number.POSITIVE_INFINITY },
      { ...written(), attempts: 1.5 },
      { ...written(), attempts: -1 },
      { ...written(), redispatched: 2 ** 53 },
      { ...written(), queuedMs: -1 },
      { ...written(), runMs: Number.POSITIVE_INFINITY },
      { ...written(), error: { type: '', message: 'm' } },
      { ...written(), error: { type: 't'.repeat(129), message: 'm' } },
      { ...written(), error: { type: 't', message: 'm'.repeat(8193) } },
      { ...written(), error: { type: 't', message: 'm', more: 1 } },
      { ...written(), error: { type: 't' } },
      { ...written(), error: undefined },
      { ...written(), leaseId: 5 },
      { ...written(), worker: 3 },
      Object.fromEntries(Object.entries(written()).filter(([key]) => key !== 'output')),
      Object.fromEntries(Object.entries(written()).filter(([key]) => key !== 'cost')),
      Object.assign(Object.create(null) as object, written()),
    ];
    for (const value of cases) {
      const ours = parseResult(value);
      const zod = ResultSchema.safeParse(value);
      expect(ours.success).toBe(zod.success);
      if (zod.success) {
        expect(ours.data).toStrictEqual(zod.data);
        expect(Object.keys(ours.data as object)).toStrictEqual(Object.keys(zod.data));
      } else {
        expect(ours.error?.issues).toStrictEqual(zod.error.issues);
      }
    }
    expect(parseResult(null).success).toBe(false);
    expect(parseResult([written()]).success).toBe(false);
  });
});
