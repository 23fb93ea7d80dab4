// parseRolloutSpec parses a run's repeated fields once (a template) and checks only the
// per-spec ones on later specs: whatever path it takes, its answer must be zod's own.
import { describe, expect, it } from 'vitest';
import { isLeaseId, LeaseIdSchema, RolloutSpecSchema, parseRolloutSpec } from '../../../src/spec/index.js';
import { rawSpec } from './spec-fixture.js';

/** zod's answer for `raw` (after parseRolloutSpec's own refusals, which come first). */
function expectZodAnswer(raw: unknown): void {
  const ours = parseRolloutSpec(raw);
  const zod = RolloutSpecSchema.safeParse(raw);
  if (!zod.success) {
    expect(ours.success).toBe(false);
    return;
  }
  expect(ours.success).toBe(true);
  expect(ours.data).toStrictEqual(zod.data);
  // Key order too: the producer hashes and measures specs by their JSON text.
  expect(JSON.stringify(ours.data)).toBe(JSON.stringify(zod.data));
}

const task = (i: number): Record<string, unknown> => ({ id: `t-${i}`, question: `q${i}`, nested: { list: [1, 'a', null, { deep: true }] } });

describe('parseRolloutSpec: specs that repeat their run fields', () => {
  const variants: Record<string, unknown>[] = [
    rawSpec(),
    rawSpec({ rendered: { files: { 'main.py': 'print(1)' } } }),
    rawSpec({ rendered: { sha256: 'a'.repeat(64), bytes: 12 } }),
    rawSpec({ sandbox: { env: ['OPENAI_API_KEY'], memoryMb: 2048, requires: { 'rollout-queue': '>=0.1.0' } }, timeouts: { runMs: 5_000 }, class: 'evaluation', rewardRange: [-1, 1] }),
    rawSpec({ placement: { gpu: 'a100' }, traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` }),
    { task: { id: 3 }, rendered: 'x', run: { $ref: 'm:e' }, reward: { $ref: 'm:e', call: false }, v: 1, leaseId: 'run-1.x', runId: 'run-1', runAttemptId: 'a' },
  ];

  it('gives zod\'s spec for each spec of a run, the first and the later ones, whichever run came before', () => {
    for (let round = 0; round < 3; round++) {
      for (const [v, variant] of variants.entries()) {
        for (let i = 0; i < 3; i++) expectZodAnswer({ ...variant, leaseId: `run-1.t-${v}-${i}`, task: task(i) });
      }
    }
  });

  it('gives zod\'s answer when a per-spec field is bad after good specs of the same run', () => {
    const base = rawSpec();
    expectZodAnswer(base);
    for (const bad of [
      { leaseId: 'other-run.t-1' },
      { leaseId: 'run-1' },
      { leaseId: 'run-1.a:b' },
      { leaseId: 7 },
      { task: { id: { nested: 1 } } },
      { task: { id: 'x', f: () => 1 } },
      { task: { id: 'x', bad: Number.NaN } },
      { task: ['not', 'an', 'object'] },
      { task: null },
      { rendered: 5 },
      { rendered: { files: { 'a.py': 3 } } },
    ]) {
      expectZodAnswer({ ...base, ...bad });
      expect(parseRolloutSpec({ ...base, ...bad }).success).toBe(false);
      expectZodAnswer(base);
    }
  });

  it('gives zod\'s answer when a repeated field differs from the last spec\'s in a way JSON text would hide', () => {
    const base = rawSpec({ rewardRange: [0, 1] });
    expectZodAnswer(base);
    for (const odd of [
      { rewardRange: [0, Number.POSITIVE_INFINITY] },
      { rewardRange: [-0, 1] },
      { rewardRange: [0, 1, 2] },
      { timeouts: { runMs: undefined } },
      { sandbox: { env: [], memoryMb: 1024, fingerprint: new Date(0) } },
      { placement: Object.assign(Object.create({ inherited: 'x' }) as object, { gpu: 'a100' }) },
      { placement: { [Symbol('hidden')]: 'x', gpu: 'a100' } },
      { run: { $ref: 'm:e', config: {}, extra: 1 } },
      { unknownField: 1 },
    ]) {
      expectZodAnswer({ ...base, ...odd });
      expectZodAnswer(base);
    }
  });

  it('gives zod\'s answer for specs of other runs with the same repeated fields, bad run ids included', () => {
    // Each rollout() call is a run of its own: the run ids are checked on each spec, not templated.
    const base = rawSpec();
    expectZodAnswer(base);
    for (const ids of [
      { runId: 'run-2', leaseId: 'run-2.t', runAttemptId: 'b' },
      { runId: 'single-0f8c', leaseId: 'single-0f8c.0', runAttemptId: 'x'.repeat(128) },
      { runId: 'r'.repeat(200), leaseId: `${'r'.repeat(200)}.t`, runAttemptId: 'c' },
      { runId: 'r'.repeat(201), leaseId: `${'r'.repeat(201)}.t` },
      { runId: 'bad.run', leaseId: 'bad.run.t' },
      { runId: 'bad:run', leaseId: 'bad:run.t' },
      { runId: '', leaseId: '.t' },
      { runId: 7, leaseId: '7.t' },
      { runId: 'run-2', leaseId: 'run-1.t' },
      { runAttemptId: '' },
      { runAttemptId: 'x'.repeat(129) },
      { runAttemptId: 3 },
    ]) {
      expectZodAnswer({ ...base, ...ids });
      expectZodAnswer(base);
    }
    expect(parseRolloutSpec({ ...base, runId: 'bad.run', leaseId: 'bad.run.t' }).success).toBe(false);
    expect(parseRolloutSpec({ ...base, runId: 'run-2', leaseId: 'run-2.t', runAttemptId: 'b' }).data?.runId).toBe('run-2');
  });

  it('never shares an object between two parsed specs', () => {
    const first = parseRolloutSpec(rawSpec());
    const second = parseRolloutSpec(rawSpec({ leaseId: 'run-1.task-2' }));
    expect(first.success && second.success).toBe(true);
    first.data?.sandbox.env.push('LEAKED');
    (first.data?.run.config as Record<string, unknown>).mutated = true;
    const third = parseRolloutSpec(rawSpec({ leaseId: 'run-1.task-3' }));
    expect(second.data?.sandbox.env).toStrictEqual([]);
    expect(third.data?.sandbox.env).toStrictEqual([]);
    expect(third.data?.run.config).toStrictEqual({ entrypoint: 'main.py' });
  });
});

describe('isLeaseId', () => {
  it('accepts exactly what LeaseIdSchema accepts', () => {
    for (const value of ['a.b', 'run-1.task-1', 'ab', 'abc', '...', 'run.', '.t', 'a b.c', 'a:b.c', 'ü.x', `${'a'.repeat(200)}.${'b'.repeat(200)}`, `${'a'.repeat(200)}.${'b'.repeat(201)}`, '', 3, null, undefined]) {
      expect(isLeaseId(value)).toBe(LeaseIdSchema.safeParse(value).success);
    }
  });
});
