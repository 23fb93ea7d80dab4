// RolloutSpecSchema / parseRolloutSpec: the documented shapes are accepted with their
// defaults filled, and every bad field is refused with an issue whose path names it.
import { describe, expect, it } from 'vitest';
import { LeaseIdSchema, RolloutSpecSchema, parseRolloutSpec, withoutDefaults, type RolloutSpec } from '../../../src/spec/index.js';
import { issuePaths, rawSpec } from './spec-fixture.js';

describe('parseRolloutSpec: accepted shapes and defaults', () => {
  it('accepts a rendered string and fills every default', () => {
    const parsed = parseRolloutSpec(rawSpec());
    expect(parsed.success).toBe(true);
    expect(parsed.data).toStrictEqual({
      ...rawSpec(),
      sandbox: { env: [], memoryMb: 1024 },
      placement: {},
      timeouts: { runMs: 600_000, rewardMs: 60_000, hangMs: 900_000, scheduleToStartMs: 300_000 },
      class: 'rollout',
      rewardRange: [0, 1],
    });
  });

  it('accepts rendered { files } and keeps every file', () => {
    const files = { 'main.py': 'print(1)', 'lib/util.py': 'X = 1\n', 'data.json': '' };
    const parsed = parseRolloutSpec(rawSpec({ rendered: { files } }));
    expect(parsed.success).toBe(true);
    expect(parsed.data?.rendered).toStrictEqual({ files });
  });

  it('keeps every explicitly given optional field instead of its default', () => {
    const given = {
      sandbox: { env: ['OPENAI_API_KEY', 'HF_TOKEN'], fingerprint: 'sha256:abc', memoryMb: 2048 },
      placement: { gpu: 'a100', region: 'eu' },
      timeouts: { runMs: 5_000, rewardMs: 2_000, hangMs: 20_000, scheduleToStartMs: 60_000, scheduleToCloseMs: 120_000 },
      class: 'evaluation',
      rewardRange: [-1, 1],
    };
    const parsed = parseRolloutSpec(rawSpec(given));
    expect(parsed.success).toBe(true);
    expect(parsed.data).toStrictEqual(rawSpec(given));
  });

  it('fills the missing fields of a partial sandbox and timeouts', () => {
    const parsed = parseRolloutSpec(rawSpec({ sandbox: { env: ['A_KEY'] }, timeouts: { runMs: 1_000 } }));
    expect(parsed.data?.sandbox).toStrictEqual({ env: ['A_KEY'], memoryMb: 1024 });
    expect(parsed.data?.timeouts).toStrictEqual({ runMs: 1_000, rewardMs: 60_000, hangMs: 900_000, scheduleToStartMs: 300_000 });
  });

  it('fills a Ref config of {} when it is absent', () => {
    const parsed = parseRolloutSpec(rawSpec({ reward: { $ref: 'rollout-queue/rewards:exactMatch' } }));
    expect(parsed.data?.reward).toStrictEqual({ $ref: 'rollout-queue/rewards:exactMatch', config: {} });
  });

  it('accepts a numeric task.id and a task without id', () => {
    expect(parseRolloutSpec(rawSpec({ task: { id: 7 } })).success).toBe(true);
    expect(parseRolloutSpec(rawSpec({ task: { question: 'q' } })).success).toBe(true);
  });

  it('gives each parsed spec its own default sandbox.env (a name added to one never reaches another)', () => {
    // Regression: zod shallow-clones a default value, so `.default({ env: [] })` shared one array.
    const first = RolloutSpecSchema.parse(rawSpec());
    first.sandbox.env.push('LEAKED_NAME');
    const second = RolloutSpecSchema.parse(rawSpec());
    expect(second.sandbox.env).toStrictEqual([]);
    expect(parseRolloutSpec(rawSpec()).data?.sandbox.env).toStrictEqual([]);
  });
});

describe('parseRolloutSpec: each bad field is refused with its path', () => {
  const refusals: readonly [string, Record<string, unknown>, string][] = [
    ['v missing', { v: undefined }, 'v'],
    ['v 2', { v: 2 }, 'v'],
    ['v "1"', { v: '1' }, 'v'],
    ['leaseId with ":"', { leaseId: 'run-1:task-1' }, 'leaseId'],
    ['leaseId empty', { leaseId: '' }, 'leaseId'],
    ['leaseId all digits (BullMQ forbids integer job ids)', { leaseId: '123' }, 'leaseId'],
    ['leaseId without "."', { leaseId: 'run-1-task-1' }, 'leaseId'],
    ['leaseId of another run', { leaseId: 'run-2.task-1' }, 'leaseId'],
    ['leaseId whose run part only starts like runId', { leaseId: 'run-10.task-1' }, 'leaseId'],
    ['runId with "."', { runId: 'run.1', leaseId: 'run.1.task-1' }, 'runId'],
    ['runId with ":"', { runId: 'run:1' }, 'runId'],
    ['runId empty', { runId: '' }, 'runId'],
    ['runAttemptId empty', { runAttemptId: '' }, 'runAttemptId'],
    ['rendered a number', { rendered: 42 }, 'rendered'],
    ['rendered { files } with a non-string file', { rendered: { files: { 'main.py': 1 } } }, 'rendered'],
    ['rendered with an unknown key', { rendered: { files: {}, extra: 1 } }, 'rendered'],
    ['sandbox.env holding a lower-case value', { sandbox: { env: ['OPENAI_API_KEY', 'sk-abc'] } }, 'sandbox.env.1'],
    ['sandbox.env holding an assignment', { sandbox: { env: ['A=B'] } }, 'sandbox.env.0'],
    ['sandbox.env not an array', { sandbox: { env: 'OPENAI_API_KEY' } }, 'sandbox.env'],
    ['sandbox with an unknown key', { sandbox: { env: [], secrets: { A: 'b' } } }, 'sandbox'],
    ['memoryMb below 64', { sandbox: { memoryMb: 63 } }, 'sandbox.memoryMb'],
    ['memoryMb above 65536', { sandbox: { memoryMb: 65_537 } }, 'sandbox.memoryMb'],
    ['memoryMb not an integer', { sandbox: { memoryMb: 512.5 } }, 'sandbox.memoryMb'],
    ['runMs 0', { timeouts: { runMs: 0 } }, 'timeouts.runMs'],
    ['runMs above a day', { timeouts: { runMs: 86_400_001 } }, 'timeouts.runMs'],
    ['hangMs below 100', { timeouts: { hangMs: 99 } }, 'timeouts.hangMs'],
    ['hangMs above a day', { timeouts: { hangMs: 86_400_001 } }, 'timeouts.hangMs'],
    ['rewardRange with min > max', { rewardRange: [1, 0] }, 'rewardRange'],
    ['rewardRange holding NaN', { rewardRange: [Number.NaN, 1] }, 'rewardRange.0'],
    ['rewardRange holding Infinity', { rewardRange: [0, Number.POSITIVE_INFINITY] }, 'rewardRange.1'],
    ['rewardRange of one number', { rewardRange: [0] }, 'rewardRange'],
    ['class unknown', { class: 'training' }, 'class'],
    ['placement value not a string', { placement: { gpu: 1 } }, 'placement.gpu'],
    ['task a string', { task: 'what is 6*7?' }, 'task'],
    ['task an array', { task: [{ id: 1 }] }, 'task'],
    ['task null', { task: null }, 'task'],
    ['task.id an object', { task: { id: { name: 't1' } } }, 'task.id'],
    ['task.id a boolean', { task: { id: true } }, 'task.id'],
    ['run missing', { run: undefined }, 'run'],
    ['reward not a Ref', { reward: 'rollout-queue/rewards:exactMatch' }, 'reward'],
  ];

  it.each(refusals)('%s', (_name, overrides, path) => {
    const raw = rawSpec(overrides);
    for (const [field, value] of Object.entries(overrides)) if (value === undefined) delete raw[field];
    const parsed = parseRolloutSpec(raw);
    expect(parsed.success).toBe(false);
    expect(issuePaths(parsed)).toContain(path);
  });

  it('refuses an unknown top-level key (strict), naming it', () => {
    const parsed = parseRolloutSpec(rawSpec({ secrets: { OPENAI_API_KEY: 'x' } }));
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({ code: 'unrecognized_keys', keys: ['secrets'] });
  });

  it('refuses data that is not an object at all', () => {
    for (const raw of [null, undefined, 'spec', 1, [rawSpec()]]) expect(parseRolloutSpec(raw).success).toBe(false);
  });

  it('says how to build a lease id when it is malformed', () => {
    const message = parseRolloutSpec(rawSpec({ leaseId: 'run-2.task-1' })).error?.issues[0]?.message ?? '';
    expect(message).toContain('leaseIdFor(runId, taskKey)');
    expect(message).toContain('"run-1"');
  });

  it('says sandbox.env takes names, never values', () => {
    const message = parseRolloutSpec(rawSpec({ sandbox: { env: ['sk-abc'] } })).error?.issues[0]?.message ?? '';
    expect(message).toMatch(/NAMES/);
    expect(message).toMatch(/never values/);
  });
});

describe('LeaseIdSchema', () => {
  it('refuses every all-digit id (BullMQ refuses integer custom job ids) and anything without "."', () => {
    for (const id of ['123', '0', '007', '99999999999']) expect(LeaseIdSchema.safeParse(id).success).toBe(false);
  });

  it('accepts run.task ids, including digit-only parts (a "." makes them non-integers for BullMQ)', () => {
    for (const id of ['r.1', '2026.1', 'eval-2026_11.task-0001', 'r.a.b']) {
      expect(LeaseIdSchema.safeParse(id).success).toBe(true);
      // BullMQ's own test: `${parseInt(jobId, 10)}` === jobId means an integer id.
      expect(`${Number.parseInt(id, 10)}`).not.toBe(id);
    }
  });

  it('refuses characters outside [A-Za-z0-9._-]', () => {
    for (const id of ['r.a b', 'r.a/b', 'r.a:b', 'r.ä', 'r.a\nb', 'r.a~b']) expect(LeaseIdSchema.safeParse(id).success).toBe(false);
  });
});

describe('parseRolloutSpec refuses "__proto__" keys that zod records would silently drop', () => {
  it('refuses the exact input helper-1 found: run = {"$ref":"a:b","config":{"__proto__":{"x":1},"y":2}}', () => {
    const run = JSON.parse('{"$ref":"a:b","config":{"__proto__":{"x":1},"y":2}}') as unknown;
    // Without the raw check zod accepts it and drops the key: the bug this guards against.
    expect(RolloutSpecSchema.safeParse(rawSpec({ run })).success).toBe(true);
    const parsed = parseRolloutSpec(rawSpec({ run }));
    expect(parsed.success).toBe(false);
    expect(issuePaths(parsed)).toStrictEqual(['run.config.__proto__']);
    expect(parsed.error?.issues[0]?.message).toMatch(/__proto__.*not allowed/);
  });

  it('refuses the same key in reward', () => {
    const reward = JSON.parse('{"$ref":"a:b","config":{"__proto__":{"x":1}}}') as unknown;
    expect(issuePaths(parseRolloutSpec(rawSpec({ reward })))).toStrictEqual(['reward.config.__proto__']);
  });

  it('refuses a task holding "__proto__", at the top or nested', () => {
    const top = JSON.parse('{"id":"t1","__proto__":{"polluted":true}}') as unknown;
    expect(issuePaths(parseRolloutSpec(rawSpec({ task: top })))).toStrictEqual(['task.__proto__']);
    const nested = JSON.parse('{"id":"t1","meta":{"list":[{"__proto__":{}}]}}') as unknown;
    expect(issuePaths(parseRolloutSpec(rawSpec({ task: nested })))).toStrictEqual(['task.meta.list.0.__proto__']);
  });

  it('refuses "__proto__" in placement and rendered.files, which are zod records too', () => {
    const placement = JSON.parse('{"__proto__":{"gpu":"a100"},"region":"eu"}') as unknown;
    expect(RolloutSpecSchema.safeParse(rawSpec({ placement })).success).toBe(true);
    expect(issuePaths(parseRolloutSpec(rawSpec({ placement })))).toStrictEqual(['placement.__proto__']);
    const files = JSON.parse('{"__proto__":"print(1)","main.py":"import x"}') as unknown;
    expect(issuePaths(parseRolloutSpec(rawSpec({ rendered: { files } })))).toStrictEqual(['rendered.files.__proto__']);
  });

  it('refuses "__proto__" at the top level and in sandbox and timeouts (strict objects)', () => {
    const top = { ...(JSON.parse('{"__proto__":{"v":1}}') as object), ...rawSpec() };
    expect(Object.keys(top)).toContain('__proto__');
    expect(parseRolloutSpec(top).success).toBe(false);
    for (const field of ['sandbox', 'timeouts']) {
      const parsed = parseRolloutSpec(rawSpec({ [field]: JSON.parse('{"__proto__":{"x":1}}') }));
      expect(parsed.success).toBe(false);
      expect(issuePaths(parsed)).toContain(field);
    }
  });

  it('refuses a nested Ref whose config is null', () => {
    const run = { $ref: 'a:b', config: { judge: { $ref: 'c:d', config: null } } };
    const parsed = parseRolloutSpec(rawSpec({ run }));
    expect(parsed.success).toBe(false);
    expect(issuePaths(parsed)).toStrictEqual(['run.config.judge.config']);
    expect(parsed.error?.issues[0]?.message).toContain('got null');
    // RolloutSpecSchema refuses it as well (the nested Ref is not behind a zod record).
    expect(RolloutSpecSchema.safeParse(rawSpec({ run })).success).toBe(false);
  });
});

describe('withoutDefaults: the job data the producer writes', () => {
  const parse = (raw: Record<string, unknown>): RolloutSpec => {
    const parsed = parseRolloutSpec(raw);
    if (!parsed.success) throw parsed.error;
    return parsed.data;
  };

  it('leaves out every top-level field equal to its default; parsing it gives the spec back', () => {
    const spec = parse(rawSpec({ sandbox: {}, timeouts: { runMs: 600_000 } }));
    const data = withoutDefaults(spec);
    expect(Object.keys(data).sort()).toEqual(Object.keys(rawSpec()).sort());
    expect(parse(JSON.parse(JSON.stringify(data)) as Record<string, unknown>)).toStrictEqual(spec);
  });

  it('keeps a field that differs from its default in any part, whole', () => {
    const spec = parse(rawSpec({ sandbox: { memoryMb: 512 }, timeouts: { hangMs: 20_000 }, placement: { gpu: 'a100' }, class: 'evaluation', rewardRange: [-1, 1] }));
    const data = withoutDefaults(spec);
    expect(data).toStrictEqual(spec);
    expect(parse(JSON.parse(JSON.stringify(data)) as Record<string, unknown>)).toStrictEqual(spec);
  });
});
