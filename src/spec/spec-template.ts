import { findJsonDataIssue, isPlainObject } from './json-data.js';
import { isLeaseId, isRunId } from './ids.js';
import { findMetaIssue } from './meta.js';
import { copyJson, isJsonText, sameJsonData } from './plain-json.js';
import { RolloutSpecSchema, type RolloutSpec } from './rollout-spec.js';

/**
 * Fields checked on each spec (`rendered`, `runId` and `runAttemptId` only when strings): those
 * that differ from spec to spec of a run (`meta`, a candidate's tag, among them), and the run's ids, which differ from run to run while
 * the rest repeats (each `rollout()` call is a run of its own). The others (run, reward, sandbox,
 * timeouts…) are parsed by zod once per distinct value ({@link parseByTemplate}).
 */
const PER_SPEC_FIELDS: ReadonlySet<string> = new Set(['leaseId', 'runId', 'runAttemptId', 'task', 'rendered', 'meta']);

const SPEC_FIELDS: ReadonlySet<string> = new Set(Object.keys(RolloutSpecSchema.shape));

/** Most templates kept (a worker serves many runs; each run has one or a few). */
const MAX_TEMPLATES = 256;

/** Longest template key kept, characters: larger repeated parts are parsed by zod on every spec. */
const MAX_TEMPLATE_KEY = 8 * 1024;

/**
 * What zod made of a spec's repeated fields: the spec's fields in input order, the value of each
 * repeated one (plain JSON data, undefined for a per-spec one), and zod's output for them with
 * placeholders for the per-spec fields. Never handed out: each spec gets a copy.
 */
interface Template {
  readonly fields: readonly string[];
  readonly values: readonly unknown[];
  readonly spec: RolloutSpec;
}

/** Templates (null: the repeated fields do not parse) by the fields' names and JSON text. */
const templates = new Map<string, Template | null>();

/** The template used last: a run's specs come in a row, so most specs match it. */
let lastTemplate: Template | undefined;

/** True when `field` of `record` is checked on each spec rather than part of the template. */
const perSpec = (field: string, record: Record<string, unknown>): boolean => PER_SPEC_FIELDS.has(field) && (field === 'leaseId' || field === 'task' || field === 'meta' || typeof record[field] === 'string');

/**
 * The spec `RolloutSpecSchema` would parse from `record`, for the common case, at a fraction
 * of its cost: zod parses the repeated fields once per distinct JSON text (the template), and
 * each spec only has its lease id, task and rendered value checked and set into a copy of the
 * template. Returns undefined whenever the result might differ from zod's (a field not plain
 * JSON, an unknown field, anything invalid): then zod parses it all, issues included.
 * Expects `parseRolloutSpec`'s checks of the raw `run`, `reward` and `task` passed.
 */
export function parseByTemplate(record: Record<string, unknown>): RolloutSpec | undefined {
  if (typeof record.leaseId !== 'string' || !isPlainObject(record.task) || record.rendered === undefined) return undefined;
  let key = '';
  const fields = Object.keys(record);
  const values: unknown[] = [];
  for (const field of fields) {
    if (!SPEC_FIELDS.has(field)) return undefined;
    const value = record[field];
    if (perSpec(field, record)) {
      key += `${field}\n`;
      values.push(undefined);
    } else if (isJsonText(value, 0)) {
      key += `${field}\n${JSON.stringify(value)}\n`;
      values.push(value);
    } else return undefined;
    if (key.length > MAX_TEMPLATE_KEY) return undefined;
  }
  let template = templates.get(key);
  if (template === undefined) {
    template = buildTemplate(record, fields, values);
    if (templates.size >= MAX_TEMPLATES) templates.clear();
    templates.set(key, template);
  }
  if (template === null) return undefined;
  const spec = fromTemplate(template, record);
  if (spec) lastTemplate = template;
  return spec;
}

/** The template of `record` (see {@link Template}): zod's output for its repeated fields, placeholders for the rest. */
function buildTemplate(record: Record<string, unknown>, fields: readonly string[], values: readonly unknown[]): Template | null {
  const input: Record<string, unknown> = {};
  for (const field of fields) input[field] = record[field];
  input.task = {};
  if (typeof input.rendered === 'string') input.rendered = '';
  // Each spec's own meta (a candidate's tag) is checked per spec: a template per tag would parse every spec.
  if ('meta' in input) input.meta = null;
  // Valid placeholders for the per-spec ids (checked on each spec): the parse fails only for the repeated fields.
  if (typeof input.runId === 'string') input.runId = 'r';
  if (typeof input.runAttemptId === 'string') input.runAttemptId = 'a';
  input.leaseId = `${String(input.runId)}.t`;
  const parsed = RolloutSpecSchema.safeParse(input);
  if (!parsed.success) return null;
  return { fields, values: values.map(copyJson), spec: copyJson(parsed.data) as RolloutSpec };
}

/**
 * True when `record` has the fields of `template` in the same order, per-spec ones where it
 * has them, and repeated ones equal to its values ({@link sameJsonData}).
 */
function matchesSource(record: Record<string, unknown>, template: Template): boolean {
  const fields = Object.keys(record);
  if (fields.length !== template.fields.length) return false;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] as string;
    if (field !== template.fields[i]) return false;
    const expected = template.values[i];
    if (expected === undefined ? !perSpec(field, record) : perSpec(field, record) || !sameJsonData(record[field], expected)) return false;
  }
  return true;
}

/**
 * A copy of `template`'s spec with the per-spec fields of `record` checked and set in, or
 * undefined when one of them is not what zod would accept as is (then zod decides).
 */
function fromTemplate(template: Template, record: Record<string, unknown>): RolloutSpec | undefined {
  const { leaseId, runId, runAttemptId, task, rendered } = record;
  if (!isRunId(runId)) return undefined;
  if (typeof runAttemptId !== 'string' || runAttemptId.length < 1 || runAttemptId.length > 128) return undefined;
  if (!isLeaseId(leaseId) || !leaseId.startsWith(`${runId}.`)) return undefined;
  if (!isPlainObject(task) || findJsonDataIssue(task, 'task', { scalarArraysOnly: false })) return undefined;
  const parsedTask = taskOf(task);
  if (!parsedTask) return undefined;
  const spec = copyJson(template.spec) as RolloutSpec;
  spec.leaseId = leaseId;
  spec.runId = runId;
  spec.runAttemptId = runAttemptId;
  spec.task = parsedTask;
  if (typeof rendered === 'string') spec.rendered = rendered;
  if ('meta' in record) {
    if (findMetaIssue(record.meta)) return undefined;
    spec.meta = copyJson(record.meta);
  }
  return spec;
}

/**
 * `TaskSchema`'s output for a task that passed `findJsonDataIssue` (a plain object of JSON
 * data): a copy with the same keys; undefined when zod might see it otherwise (symbol keys,
 * a `task.id` neither string nor number).
 */
function taskOf(task: Record<string, unknown>): Record<string, unknown> | undefined {
  const id = task.id;
  if (id !== undefined && typeof id !== 'string' && typeof id !== 'number') return undefined;
  if (Object.getOwnPropertySymbols(task).length > 0) return undefined;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(task)) copy[key] = task[key];
  return copy;
}

/**
 * The spec of `record` by the template used last, when `record`'s repeated fields equal its
 * values (a run's specs come in a row): the common case of `parseRolloutSpec`, before any check
 * of the raw values. Undefined when it does not match or a per-spec field needs zod.
 */
export function parseByLastTemplate(record: Record<string, unknown>): RolloutSpec | undefined {
  return lastTemplate && matchesSource(record, lastTemplate) ? fromTemplate(lastTemplate, record) : undefined;
}
