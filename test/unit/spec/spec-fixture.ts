import fc from 'fast-check';
import { FORBIDDEN_KEYS, type RolloutSpecInput } from '../../../src/spec/index.js';

/** A minimal valid raw spec (as a coordinator would enqueue it); `overrides` replace whole fields. */
export function rawSpec(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    v: 1,
    leaseId: 'run-1.task-1',
    runId: 'run-1',
    runAttemptId: 'attempt-1',
    rendered: 'print(42)',
    task: { id: 'task-1', question: 'What is 6 * 7?', answer: 42 },
    run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.py' } },
    reward: { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'answer' } },
    ...overrides,
  };
}

/** Issue paths of a failed parse, each joined with "." (e.g. "run.config.model.temperature"). */
export function issuePaths(result: { success: boolean; error?: { issues: readonly { path: readonly PropertyKey[] }[] } }): string[] {
  if (result.success) throw new Error('expected the parse to fail, it succeeded');
  return (result.error?.issues ?? []).map((issue) => issue.path.map(String).join('.'));
}

// ---- arbitraries of valid specs (JSON data only: what a coordinator in any language can send) ----

/** Object keys: any short string except the ones refused as prototype pollution. */
export const keyArb = fc.string({ maxLength: 8 }).filter((key) => !FORBIDDEN_KEYS.has(key) && key !== '$ref');

/** A finite double, with -0 as 0 (JSON has no -0; see the round-trip test that covers -0). */
const finiteArb = fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (Object.is(n, -0) ? 0 : n));

export const scalarArb = fc.oneof(
  fc.string({ maxLength: 12, unit: 'binary' }),
  finiteArb,
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
);

/** Ref config: scalars, arrays of scalars, objects of these, nested Refs. */
const configArb: fc.Arbitrary<Record<string, unknown>> = fc.letrec((tie) => ({
  config: fc.dictionary(
    keyArb,
    fc.oneof(
      { depthSize: 'small' },
      { arbitrary: scalarArb, weight: 5 },
      { arbitrary: fc.array(scalarArb, { maxLength: 4 }), weight: 2 },
      { arbitrary: tie('config'), weight: 2 },
      { arbitrary: tie('ref'), weight: 1 },
    ),
    { maxKeys: 4, noNullPrototype: true },
  ),
  ref: fc.record(
    { $ref: fc.constantFrom('rollout-queue/rewards:exactMatch', '@acme/judges:llmJudge'), config: tie('config'), call: fc.boolean() },
    { requiredKeys: ['$ref', 'config'], noNullPrototype: true },
  ),
})).config;

export const refArb = fc.record(
  { $ref: fc.constantFrom('rollout-queue/runners:codeRunner', 'rollout-queue/rewards:lastNumber', '@acme/rollouts/runners:agent'), config: configArb, call: fc.boolean() },
  { requiredKeys: ['$ref', 'config'], noNullPrototype: true },
);

/** Task values: any JSON data (tasks, unlike config, may hold arrays of objects). */
const taskValueArb: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    { arbitrary: scalarArb, weight: 5 },
    { arbitrary: fc.array(tie('value'), { maxLength: 3 }), weight: 1 },
    { arbitrary: fc.dictionary(keyArb, tie('value'), { maxKeys: 3, noNullPrototype: true }), weight: 1 },
  ),
})).value;

export const runIdArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/);
export const envNameArb = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,15}$/);

/** A valid raw spec with every optional field sometimes present, sometimes left to its default. */
export const validRawSpecArb: fc.Arbitrary<RolloutSpecInput> = fc
  .record(
    {
      runId: runIdArb,
      taskKey: fc.stringMatching(/^[A-Za-z0-9._-]{1,24}$/),
      runAttemptId: fc.string({ minLength: 1, maxLength: 20 }),
      rendered: fc.oneof(fc.string({ maxLength: 40, unit: 'binary' }), fc.record({ files: fc.dictionary(keyArb.filter((k) => k.length > 0), fc.string({ maxLength: 30 }), { maxKeys: 3, noNullPrototype: true }) }, { noNullPrototype: true })),
      task: fc.record({ id: fc.oneof(fc.string({ maxLength: 10 }), fc.integer()), data: fc.dictionary(keyArb, taskValueArb, { maxKeys: 3, noNullPrototype: true }) }, { noNullPrototype: true }),
      run: refArb,
      reward: refArb,
      sandbox: fc.option(
        fc.record(
          { env: fc.uniqueArray(envNameArb, { maxLength: 4 }), fingerprint: fc.string({ maxLength: 20 }), memoryMb: fc.integer({ min: 64, max: 65_536 }) },
          { requiredKeys: [], noNullPrototype: true },
        ),
        { nil: undefined },
      ),
      placement: fc.option(fc.dictionary(keyArb, fc.string({ maxLength: 16 }), { maxKeys: 3, noNullPrototype: true }), { nil: undefined }),
      timeouts: fc.option(
        fc.record({ runMs: fc.integer({ min: 1, max: 86_400_000 }), hangMs: fc.integer({ min: 100, max: 86_400_000 }) }, { requiredKeys: [], noNullPrototype: true }),
        { nil: undefined },
      ),
      class: fc.option(fc.constantFrom('rollout' as const, 'evaluation' as const), { nil: undefined }),
      rewardRange: fc.option(
        fc.tuple(finiteArb, finiteArb).map(([a, b]) => (a <= b ? [a, b] : [b, a]) as [number, number]),
        { nil: undefined },
      ),
    },
    { requiredKeys: ['runId', 'taskKey', 'runAttemptId', 'rendered', 'task', 'run', 'reward'], noNullPrototype: true },
  )
  .map(({ taskKey, task, ...rest }) => {
    // Drop fields left to their default (undefined never appears in JSON data).
    const spec: Record<string, unknown> = { v: 1, leaseId: `${rest.runId}.${taskKey}`, task: { ...task.data, id: task.id } };
    for (const [field, value] of Object.entries(rest)) if (value !== undefined) spec[field] = value;
    return spec as unknown as RolloutSpecInput;
  });
