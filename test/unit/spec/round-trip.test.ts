// ACCEPTANCE 8: a spec survives a JSON round trip unchanged and its lease id is stable.
// ACCEPTANCE 9: sandbox.env holds names only; a serialized spec never carries a value.
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { RolloutSpecSchema, parseRolloutSpec, type RolloutSpec } from '../../../src/spec/index.js';
import { leaseIdFor } from '../../../src/lease/index.js';
import { rawSpec, validRawSpecArb } from './spec-fixture.js';

const viaJson = <T>(value: T): unknown => JSON.parse(JSON.stringify(value)) as unknown;

function parsedOrThrow(raw: unknown): RolloutSpec {
  const parsed = parseRolloutSpec(raw);
  if (!parsed.success) throw new Error(`generated spec refused: ${JSON.stringify(parsed.error.issues)}`);
  return parsed.data;
}

describe('JSON round trip (ACCEPTANCE 8)', () => {
  it('a parsed spec survives JSON unchanged and re-parses to a deep-equal value, lease id included', () => {
    fc.assert(
      fc.property(validRawSpecArb, (raw) => {
        const spec = parsedOrThrow(raw);
        const wire = viaJson(spec);
        expect(wire).toStrictEqual(spec);
        const again = parsedOrThrow(wire);
        expect(again).toStrictEqual(spec);
        expect(again.leaseId).toBe(spec.leaseId);
        expect(JSON.stringify(again)).toBe(JSON.stringify(spec));
      }),
      { numRuns: 300 },
    );
  });

  it('the raw spec as a coordinator writes it (defaults omitted) parses the same before and after JSON', () => {
    fc.assert(
      fc.property(validRawSpecArb, (raw) => {
        expect(parsedOrThrow(viaJson(raw))).toStrictEqual(parsedOrThrow(raw));
      }),
      { numRuns: 200 },
    );
  });

  it('a lease id built by leaseIdFor is unchanged by the round trip, for any task key', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }), (taskKey) => {
        const leaseId = leaseIdFor('run-1', taskKey);
        const spec = parsedOrThrow(rawSpec({ leaseId, task: { id: taskKey } }));
        const again = parsedOrThrow(viaJson(spec));
        expect(again.leaseId).toBe(leaseId);
        expect(leaseIdFor(again.runId, again.task.id as string)).toBe(leaseId);
        expect(again.task.id).toBe(taskKey);
      }),
      { numRuns: 300 },
    );
  });

  it('-0 (which JSON cannot carry) becomes 0, and the JSON text is a fixed point from the first trip on', () => {
    const spec = parsedOrThrow(rawSpec({ task: { id: 't', x: -0 }, rewardRange: [-0, 1] }));
    const again = parsedOrThrow(viaJson(spec));
    expect(Object.is(again.task.x, 0)).toBe(true);
    expect(JSON.stringify(again)).toBe(JSON.stringify(spec));
    expect(parsedOrThrow(viaJson(again))).toStrictEqual(again);
  });

  it('a spec holding anything JSON cannot carry is refused instead of changing on the way', () => {
    // A value JSON.stringify would drop or turn into null must not pass: the worker would see different data.
    for (const task of [{ id: 't', a: undefined }, { id: 't', a: Number.NaN }, { id: 't', a: new Date(0) }, { id: 't', a: () => 1 }]) {
      expect(parseRolloutSpec(rawSpec({ task })).success).toBe(false);
    }
  });
});

describe('secrets travel by name only (ACCEPTANCE 9)', () => {
  const NAME = 'RQ_UNIT_FAKE_SECRET';
  const VALUE = 'sk-fake-7f3a9c1e-value-that-must-not-travel';
  afterEach(() => {
    delete process.env[NAME];
  });

  it('a spec naming a set environment variable serializes the name, never its value', () => {
    process.env[NAME] = VALUE;
    const spec = parsedOrThrow(rawSpec({ sandbox: { env: [NAME, 'OPENAI_API_KEY'] } }));
    const json = JSON.stringify(spec);
    expect(json).toContain(`"env":["${NAME}","OPENAI_API_KEY"]`);
    expect(json).not.toContain(VALUE);
    expect(JSON.stringify(parsedOrThrow(JSON.parse(json)))).not.toContain(VALUE);
  });

  it('refuses a value where a name belongs, and never echoes the value in the issue message', () => {
    for (const env of [[VALUE], ['OPENAI_API_KEY=sk-abc'], ['sk-abc'], ['lowercase_name'], ['1STARTS_WITH_DIGIT'], ['']]) {
      const parsed = parseRolloutSpec(rawSpec({ sandbox: { env } }));
      expect(parsed.success).toBe(false);
      for (const issue of parsed.error?.issues ?? []) {
        if (env[0]) expect(issue.message).not.toContain(env[0]);
      }
    }
  });

  it('has no field that could carry a value: sandbox is strict', () => {
    expect(RolloutSpecSchema.safeParse(rawSpec({ sandbox: { env: [NAME], values: { [NAME]: VALUE } } })).success).toBe(false);
  });
});
