import { z } from 'zod';
import { RolloutSpecSchema } from './rollout-spec.js';
import { ResultSchema } from './result.js';

/**
 * JSON Schema (draft 2020-12) documents of the wire formats, for coordinators in other
 * languages. `io: 'input'` for specs (defaults may be omitted when enqueuing), `'output'`
 * for results (every field is present).
 *
 * @returns `{ "rollout-spec": schema, "result": schema }`, file stem → JSON value.
 */
export function wireJsonSchemas(): Record<string, unknown> {
  return {
    'rollout-spec': z.toJSONSchema(RolloutSpecSchema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }),
    result: z.toJSONSchema(ResultSchema, { io: 'output', unrepresentable: 'any', target: 'draft-2020-12' }),
  };
}
