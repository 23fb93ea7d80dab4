// The published JSON Schemas: draft 2020-12 documents generated from the zod contract, and
// the committed schema/*.json files equal to what the code generates.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { wireJsonSchemas } from '../../../src/spec/index.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

// JSON Schema documents are read by walking them; `any` keeps that readable.
type JsonObject = Record<string, any>;

describe('wireJsonSchemas()', () => {
  const schemas = wireJsonSchemas() as Record<string, JsonObject>;

  it('returns exactly rollout-spec and result, both draft 2020-12', () => {
    expect(Object.keys(schemas).sort()).toStrictEqual(['result', 'rollout-spec']);
    for (const schema of Object.values(schemas)) expect(schema.$schema).toBe(DRAFT_2020_12);
  });

  it('describes a spec as written by a caller: defaulted fields optional, unknown fields refused', () => {
    const spec = schemas['rollout-spec']?.$defs?.RolloutSpec as JsonObject;
    expect(schemas['rollout-spec']?.$ref).toBe('#/$defs/RolloutSpec');
    expect(spec.required).toStrictEqual(['v', 'leaseId', 'runId', 'runAttemptId', 'rendered', 'task', 'run', 'reward']);
    expect(Object.keys(spec.properties)).toStrictEqual([
      'v', 'leaseId', 'runId', 'runAttemptId', 'rendered', 'task', 'run', 'reward',
      'sandbox', 'placement', 'timeouts', 'class', 'traceparent', 'rewardRange', 'goldKeys', 'goldVisibleToRun', 'meta',
    ]);
    expect(spec.additionalProperties).toBe(false);
    expect(spec.properties.v.const).toBe(1);
    expect(schemas['rollout-spec']?.$defs?.Ref).toBeDefined();
  });

  it('describes a Result with every field present', () => {
    const result = schemas.result?.$defs?.Result as JsonObject;
    expect(result.required).toStrictEqual([
      'leaseId', 'runId', 'taskId', 'kind', 'output', 'reward', 'error', 'attempts',
      'redispatched', 'worker', 'queuedMs', 'runMs', 'finishedAt', 'cost',
    ]);
    expect(result.additionalProperties).toBe(false);
  });

  it('is a fresh, deterministic value on each call', () => {
    const again = wireJsonSchemas();
    expect(again).toStrictEqual(schemas);
    expect(again['rollout-spec']).not.toBe(schemas['rollout-spec']);
  });

  it.each(['rollout-spec', 'result'])('schema/%s.json is the committed copy of the generated schema', (stem) => {
    const committed = readFileSync(`${repoRoot}schema/${stem}.json`, 'utf8');
    expect(committed).toBe(`${JSON.stringify(schemas[stem], null, 2)}\n`);
  });
});
