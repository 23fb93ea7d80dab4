import { z } from 'zod';
import { findJsonDataIssue } from './json-data.js';
import { findRefIssue } from './ref-target.js';
import { RolloutSpecSchema, type RolloutSpec } from './rollout-spec.js';
import { parseByLastTemplate, parseByTemplate } from './spec-template.js';

/**
 * Parses a rollout spec from raw data (a job's data, a JSON line), the only way specs
 * should be read. Besides `RolloutSpecSchema` it checks the raw `run`, `reward` and
 * `task` values, and the keys of `placement` and `rendered.files`, first, because zod's
 * records silently drop a `__proto__` key that `JSON.parse` creates as an own property:
 * such a key must be refused, not ignored. The fields a run's specs share are parsed by zod
 * once per distinct value and reused (see `parseByTemplate`); the answer is always zod's.
 * @returns zod's safe-parse result; issues carry the path of the first bad value.
 */
export function parseRolloutSpec(raw: unknown): z.ZodSafeParseResult<RolloutSpec> {
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    const record = raw as Record<string, unknown>;
    // The common case first: the repeated fields equal those of the last spec parsed.
    const again = parseByLastTemplate(record);
    if (again) return { success: true, data: again } as z.ZodSafeParseResult<RolloutSpec>;
    for (const field of ['run', 'reward'] as const) {
      const issue = record[field] === undefined ? undefined : findRefIssue(record[field], field);
      if (issue) return failure(issue.path, issue.message, raw);
    }
    if (record.task !== null && typeof record.task === 'object') {
      const issue = findJsonDataIssue(record.task, 'task', { scalarArraysOnly: false });
      if (issue) return failure(issue.path, issue.message, raw);
    }
    const rendered = record.rendered;
    const files = rendered !== null && typeof rendered === 'object' ? (rendered as Record<string, unknown>).files : undefined;
    for (const [path, value] of [['placement', record.placement], ['rendered.files', files]] as const) {
      if (value !== null && typeof value === 'object' && Object.prototype.hasOwnProperty.call(value, '__proto__')) {
        return failure(`${path}.__proto__`, 'key "__proto__" is not allowed (prototype pollution); rename it', raw);
      }
    }
    const fast = parseByTemplate(record);
    if (fast) return { success: true, data: fast } as z.ZodSafeParseResult<RolloutSpec>;
  }
  return RolloutSpecSchema.safeParse(raw);
}

function failure(path: string, message: string, input: unknown): z.ZodSafeParseResult<RolloutSpec> {
  const parts = path.split(/\.|\[(\d+)\]/).filter((part) => part !== undefined && part !== '');
  const error = new z.ZodError([{ code: 'custom', path: parts.map((part) => (/^\d+$/.test(part) ? Number(part) : part)), message, input }]);
  return { success: false, error } as z.ZodSafeParseResult<RolloutSpec>;
}
