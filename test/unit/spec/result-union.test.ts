// Issue 31 item 6: Result is a union on `kind`. The type half of this file is checked by
// `npm run typecheck` (tsconfig.json includes test/): each `@ts-expect-error` line must fail to
// compile, or the typecheck fails with "Unused '@ts-expect-error' directive". The runtime half
// checks that parsing refuses a Result whose reward or error does not fit its kind, so the type
// never describes a value the parser let through.
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  parseResult,
  resultEnding,
  ResultSchema,
  type CallerResult,
  type ErrorInfo,
  type FailedResult,
  type InfrastructureResult,
  type ModelResult,
  type OkResult,
  type Result,
} from '../../../src/spec/index.js';

const fields = {
  leaseId: 'run-1.t-1', runId: 'run-1', taskId: 't-1', output: { text: '42' },
  attempts: 1, redispatched: 0, worker: 'w-1', queuedMs: 3, runMs: 1, finishedAt: '2026-01-01T00:00:00.000Z', cost: [],
};

/** What a coordinator writes: the reward of an ok Result, the error type of the others. */
function describeResult(result: Result): string {
  if (result.kind === 'ok') {
    expectTypeOf(result).toEqualTypeOf<OkResult>();
    expectTypeOf(result.reward).toEqualTypeOf<number>();
    expectTypeOf(result.error).toEqualTypeOf<null>();
    return `reward ${result.reward.toFixed(2)}`;
  }
  expectTypeOf(result).toEqualTypeOf<ModelResult | InfrastructureResult | CallerResult>();
  expectTypeOf(result.reward).toEqualTypeOf<null>();
  expectTypeOf(result.error).toEqualTypeOf<ErrorInfo>();
  // No `?.` and no `!`: a failed Result always names its error.
  return `${result.kind} ${result.error.type}`;
}

/** Each marked line must fail to compile; the function is never called (it would throw). */
function misuse(result: Result): void {
  // @ts-expect-error reward is number | null before narrowing: no arithmetic on it
  const unnarrowed: number = result.reward;
  // @ts-expect-error error may be null before narrowing
  const errorType: string = result.error.type;
  if (result.kind === 'model') {
    // @ts-expect-error a model Result has no reward to read as a number
    const reward: number = result.reward;
    void reward;
  }
  // @ts-expect-error an ok Result carries a number reward, not null
  const okWithoutReward: Result = { ...fields, kind: 'ok', reward: null, error: null };
  // @ts-expect-error an ok Result carries no error
  const okWithError: Result = { ...fields, kind: 'ok', reward: 1, error: { type: 'X', message: 'y' } };
  // @ts-expect-error a failed Result names its error
  const modelWithoutError: Result = { ...fields, kind: 'model', reward: null, error: null };
  // @ts-expect-error a failed Result has no reward
  const callerWithReward: Result = { ...fields, kind: 'caller', reward: 0, error: { type: 'X', message: 'y' } };
  // @ts-expect-error not a kind
  const unknownKind: Result = { ...fields, kind: 'timeout', reward: null, error: { type: 'X', message: 'y' } };
  void [unnarrowed, errorType, okWithoutReward, okWithError, modelWithoutError, callerWithReward, unknownKind];
}

describe('Result narrows on kind', () => {
  it('gives an ok Result a number reward and every other kind an error', () => {
    const ok: Result = { ...fields, kind: 'ok', reward: 0.5, error: null };
    const model: Result = { ...fields, kind: 'model', reward: null, error: { type: 'NonZeroExit', message: 'exit 1' } };
    expect(describeResult(ok)).toBe('reward 0.50');
    expect(describeResult(model)).toBe('model NonZeroExit');
  });

  it('narrows each failed kind to its own member', () => {
    const result = parseResult({ ...fields, kind: 'caller', reward: null, error: { type: 'RefNotAllowed', message: 'm' } });
    expect(result.success).toBe(true);
    const data = result.data as Result;
    if (data.kind === 'caller') expectTypeOf(data).toEqualTypeOf<CallerResult>();
    else if (data.kind === 'infrastructure') expectTypeOf(data).toEqualTypeOf<FailedResult<'infrastructure'>>();
    else if (data.kind === 'model') expectTypeOf(data).toEqualTypeOf<ModelResult>();
    else expectTypeOf(data).toEqualTypeOf<OkResult>();
    expect(data.kind).toBe('caller');
  });

  it('refuses misuse at compile time (npm run typecheck; never called)', () => {
    expectTypeOf(misuse).toBeFunction();
  });
});

describe('parsing checks what each kind carries (the JSON Schema is unchanged)', () => {
  it.each([
    ['an ok Result without a reward', { kind: 'ok', reward: null, error: null }, 'reward'],
    ['an ok Result with an error', { kind: 'ok', reward: 1, error: { type: 'X', message: 'y' } }, 'error'],
    ['a model Result without an error', { kind: 'model', reward: null, error: null }, 'error'],
    ['an infrastructure Result with a reward', { kind: 'infrastructure', reward: 0, error: { type: 'X', message: 'y' } }, 'reward'],
    ['a caller Result without an error', { kind: 'caller', reward: null, error: null }, 'error'],
  ] as const)('refuses %s, in parseResult and ResultSchema alike', (_name, ending, path) => {
    for (const parsed of [parseResult({ ...fields, ...ending }), ResultSchema.safeParse({ ...fields, ...ending })]) {
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues.map((issue) => issue.path.join('.'))).toEqual([path]);
    }
  });
});

describe('resultEnding', () => {
  it('keeps what fits the kind, in the wire order kind, output, reward, error', () => {
    expect(Object.keys(resultEnding('ok', 'x', 1, null))).toEqual(['kind', 'output', 'reward', 'error']);
    expect(resultEnding('ok', 'x', 0.25, null)).toEqual({ kind: 'ok', output: 'x', reward: 0.25, error: null });
    expect(resultEnding('model', 'x', 1, { type: 'RunThrew', message: 'm' })).toEqual({ kind: 'model', output: 'x', reward: null, error: { type: 'RunThrew', message: 'm' } });
  });

  it('never lets an ok without a finite reward pass as a score, and names a missing error', () => {
    for (const reward of [null, Number.NaN, Number.POSITIVE_INFINITY]) {
      const ending = resultEnding('ok', 'x', reward, null);
      expect(ending.kind).toBe('infrastructure');
      expect(ending.error?.type).toBe('BadResult');
    }
    expect(resultEnding('caller', null, null, null).error).toEqual({ type: 'Unknown', message: 'the rollout ended caller without naming an error' });
  });
});
