import { findMetaIssue, isPlainObject, parseRolloutSpec, type ErrorInfo, type RolloutSpec, type RolloutSpecInput } from '../spec/index.js';
import { leaseIdFor } from '../lease/index.js';
import { specIssueText } from './spec-issue-text.js';
import { SecretScan } from './find-leaked-secret.js';
import { renderedFilesIssue } from './rendered-files-issue.js';

/**
 * What a caller hands to `mapRollouts`: a rollout spec without the fields the producer fills
 * (`v`, `leaseId`, `runId`, `runAttemptId`), plus an optional `taskKey` naming the task within
 * the run (default `task.id`, else the draft's 0-based position as a string). The lease id is
 * `<runId>.<taskKey>`, so keep task keys stable to make re-submission after a restart a no-op.
 */
export type RolloutDraft = Omit<RolloutSpecInput, 'v' | 'leaseId' | 'runId' | 'runAttemptId'> & {
  readonly taskKey?: string | number;
};

/** Fields of a spec that only the producer sets; a draft holding one is refused. */
const PRODUCER_FIELDS = ['v', 'leaseId', 'runId', 'runAttemptId'] as const;

/** What {@link prepareDraft} needs besides the draft. */
export interface DraftContext {
  readonly runId: string;
  readonly runAttemptId: string;
  /** 0-based position of the draft in the caller's list. */
  readonly index: number;
  readonly maxSpecBytes: number;
  /** Largest serialized `task`, bytes. */
  readonly maxTaskBytes: number;
  /** Searches the coordinator's environment for secret values (default: a new scan of `process.env`; share one per batch). */
  readonly secrets?: SecretScan;
}

/**
 * A draft turned into a valid spec, or refused (never enqueued): `kind` `caller` for the caller's
 * part of the spec, `model` (`BadRenderedFile`) for a bad file inside `rendered.files`, which the
 * model wrote and which must not stop the run. A refusal keeps the draft's `meta` when that is
 * valid, for its Result.
 */
export type PreparedDraft =
  | { readonly ok: true; readonly leaseId: string; readonly taskId: string; readonly spec: RolloutSpec; readonly bytes: number }
  | { readonly ok: false; readonly kind: 'caller' | 'model'; readonly leaseId: string; readonly taskId: string; readonly error: ErrorInfo; readonly meta?: unknown };

function pathText(path: readonly PropertyKey[]): string {
  let text = '';
  for (const part of path) text += typeof part === 'number' ? `[${part}]` : text ? `.${String(part)}` : String(part);
  return text || '(spec)';
}

function refuse(leaseId: string, taskId: string, type: string, message: string, kind: 'caller' | 'model' = 'caller'): PreparedDraft {
  return { ok: false, kind, leaseId, taskId, error: { type, message } };
}

/** Where the key naming a draft's lease came from. */
export type LeaseKeySource = 'taskKey' | 'task.id' | 'position';

/** The key naming a draft's lease: `taskKey`, else `task.id`, else its position (`index`); where it came from; and its task id. */
function keyOf(draft: unknown, index: number): { record: Record<string, unknown> | undefined; wanted: unknown; by: LeaseKeySource; taskId: string } {
  const record = isPlainObject(draft) ? draft : undefined;
  const task = record && isPlainObject(record.task) ? record.task : undefined;
  const taskIdValue = task?.id;
  const idKey = typeof taskIdValue === 'string' || typeof taskIdValue === 'number' ? taskIdValue : undefined;
  const by: LeaseKeySource = record?.taskKey !== undefined ? 'taskKey' : idKey !== undefined ? 'task.id' : 'position';
  const wanted = record?.taskKey ?? idKey ?? String(index);
  return { record, wanted, by, taskId: String(idKey ?? wanted) };
}

/** How two drafts named one lease, in words (fresh-user report: a draft keyed by its position was said to repeat a task.id). */
function namedBy(first: number, repeat: number, [firstBy, repeatBy]: readonly [LeaseKeySource, LeaseKeySource]): string {
  const field = (by: LeaseKeySource): string => (by === 'position' ? 'position in the list (it has no taskKey or task.id)' : by);
  return firstBy === repeatBy ? `both by their ${field(firstBy)}` : `#${first} by its ${field(firstBy)}, #${repeat} by its ${field(repeatBy)}`;
}

/**
 * Raised synchronously by `mapRollouts` (and `POST /runs`, as a 400) when two drafts of one
 * list name the same lease (by `taskKey`, `task.id`, or the position of a draft with neither):
 * a lease has one Result, so one of them could not get its own. Nothing was enqueued. Names
 * both positions and how each named the lease (`keys`), never a value.
 */
export class DuplicateLeaseError extends TypeError {
  constructor(
    readonly leaseId: string,
    readonly first: number,
    readonly repeat: number,
    readonly keys: readonly [LeaseKeySource, LeaseKeySource],
  ) {
    super(`drafts #${first} and #${repeat} name the same lease ${leaseId} (${namedBy(first, repeat, keys)}); give each draft a distinct taskKey or task.id; nothing was enqueued`);
    this.name = 'DuplicateLeaseError';
  }
}

/**
 * Refuses a list of drafts two of which name one lease, before anything is enqueued (a stream
 * cannot be checked ahead: a repeat there gets its own `caller` Result, `DuplicateLease`).
 * Drafts whose key is not valid are left to {@link prepareDraft}'s refusal.
 * @throws DuplicateLeaseError naming the first repeat.
 */
export function refuseRepeatedLeases(runId: string, drafts: readonly unknown[]): void {
  const seen = new Map<string, { index: number; by: LeaseKeySource }>();
  drafts.forEach((draft, index) => {
    const { wanted, by } = keyOf(draft, index);
    if (typeof wanted !== 'string' && typeof wanted !== 'number') return;
    let leaseId: string;
    try {
      leaseId = leaseIdFor(runId, wanted);
    } catch {
      return;
    }
    const first = seen.get(leaseId);
    if (first !== undefined) throw new DuplicateLeaseError(leaseId, first.index, index, [first.by, by]);
    seen.set(leaseId, { index, by });
  });
}

/**
 * Fills the producer's fields into a draft, validates it with `RolloutSpecSchema`, and checks
 * its serialized size and that it carries no secret value. Never throws for a bad draft:
 * the refusal is data, so it can become the lease's `caller` Result. Messages name the
 * field path and the fix, never a field's value (values may be secrets).
 */
export function prepareDraft(draft: unknown, ctx: DraftContext): PreparedDraft {
  const prepared = prepareValid(draft, ctx);
  // Never for SecretInSpec: the secret value may sit in the meta itself.
  if (prepared.ok || prepared.error.type === 'SecretInSpec' || !isPlainObject(draft) || draft.meta === undefined || findMetaIssue(draft.meta)) return prepared;
  // The refusal's caller Result still carries the caller's tag, so it is matched like any other.
  return { ...prepared, meta: draft.meta };
}

/** {@link prepareDraft} without the refusal's meta. */
function prepareValid(draft: unknown, ctx: DraftContext): PreparedDraft {
  const fallbackKey = String(ctx.index);
  const { record, wanted, taskId } = keyOf(draft, ctx.index);

  let leaseId: string;
  try {
    if (typeof wanted !== 'string' && typeof wanted !== 'number') throw new Error('taskKey must be a string or a number');
    leaseId = leaseIdFor(ctx.runId, wanted);
  } catch (err) {
    const fallback = leaseIdFor(ctx.runId, fallbackKey);
    return refuse(fallback, taskId, 'InvalidSpec', `draft #${ctx.index}: ${(err as Error).message}; give the draft a non-empty taskKey or task.id, or leave both out and the task is named by its position`);
  }
  if (!record) {
    return refuse(leaseId, taskId, 'InvalidSpec', `draft #${ctx.index} is not a plain object; pass { rendered, task, run, reward, ... }`);
  }
  for (const field of PRODUCER_FIELDS) {
    if (field in record) {
      return refuse(leaseId, taskId, 'InvalidSpec', `draft field "${field}" is set by the producer; remove it from the draft (lease ${leaseId})`);
    }
  }

  // A loop, not `{ taskKey, ...rest }` and a spread: V8's object rest copies ~10× slower (once per draft).
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(record)) if (key !== 'taskKey') input[key] = record[key];
  input.v = 1;
  input.leaseId = leaseId;
  input.runId = ctx.runId;
  input.runAttemptId = ctx.runAttemptId;
  // A bad file the model wrote: the rest of the spec is still checked (a caller fault wins), with
  // the files left out; the draft then ends `model` without running.
  const badFile = renderedFilesIssue(input.rendered);
  if (badFile !== undefined) input.rendered = { files: {} };
  const parsed = parseRolloutSpec(input);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 3).map((issue) => `spec field "${pathText(issue.path)}": ${specIssueText(issue)}`);
    const more = parsed.error.issues.length > 3 ? ` (and ${parsed.error.issues.length - 3} more)` : '';
    return refuse(leaseId, taskId, 'InvalidSpec', `lease ${leaseId}: ${issues.join('; ')}${more}; fix these fields of the draft (see schema/rollout-spec.json)`);
  }
  const spec = parsed.data;
  const json = JSON.stringify(spec);
  const bytes = Buffer.byteLength(json, 'utf8');
  // The task's JSON is part of the spec's: a spec within maxTaskBytes has a task within it too.
  const oversize =
    (bytes > ctx.maxTaskBytes ? sizeProblem(leaseId, 'task', Buffer.byteLength(JSON.stringify(spec.task), 'utf8'), ctx.maxTaskBytes, 'maxTaskBytes') : undefined) ??
    sizeProblem(leaseId, 'spec', bytes, ctx.maxSpecBytes, 'maxSpecBytes');
  if (oversize) return refuse(leaseId, taskId, 'InvalidSpec', oversize);
  const leaked = (ctx.secrets ?? new SecretScan()).find(json, spec.sandbox.env);
  if (leaked) {
    // Already named in sandbox.env: the fix is only to take the value out (fresh-user report).
    const fix = spec.sandbox.env.includes(leaked)
      ? `take the value out of the draft (the task, rendered or a Ref config): sandbox.env names "${leaked}" already, so the worker passes its own value to the rollout as ctx.secrets.${leaked}`
      : `list "${leaked}" in sandbox.env and let the worker read it from its own environment`;
    return refuse(leaseId, taskId, 'SecretInSpec', `lease ${leaseId}: the spec contains the value of the coordinator's environment variable ${leaked}; a spec must never carry a secret value: ${fix}`);
  }
  if (badFile !== undefined) return refuse(leaseId, taskId, 'BadRenderedFile', `lease ${leaseId}: ${badFile}; the rollout was not run (a model fault: the run goes on)`, 'model');
  return { ok: true, leaseId, taskId, spec, bytes };
}

/** The message for a `what` (task, spec) whose JSON is `bytes` long, when over `limit` bytes; else undefined. */
function sizeProblem(leaseId: string, what: string, bytes: number, limit: number, option: string): string | undefined {
  if (bytes <= limit) return undefined;
  return `lease ${leaseId}: the ${what} is ${bytes} bytes as JSON, over ${option} ${limit}; keep large data out of the ${what} (store it where the worker can read it and pass its key) or raise ${option}`;
}

/**
 * The first draft of a list that {@link prepareDraft} refuses as `caller` (bad field, oversized
 * spec or task, a secret value; not a `model` refusal such as `BadRenderedFile`), checked before anything is enqueued, as the producer would check it:
 * for a caller that must answer at once rather than through a `caller` Result per lease (the
 * gateway's `POST /runs`). The run attempt id is a stand-in of the producer's (a UUID's length).
 * @param limits bytes: the producer's `maxSpecBytes` and `maxTaskBytes`.
 * @returns the draft's 0-based index and its refusal (type and message, never a value), or undefined.
 */
export function firstRefusedDraft(runId: string, drafts: readonly unknown[], limits: { readonly maxSpecBytes: number; readonly maxTaskBytes: number }): { readonly index: number; readonly error: ErrorInfo } | undefined {
  const secrets = new SecretScan();
  const runAttemptId = '00000000-0000-4000-8000-000000000000';
  for (let index = 0; index < drafts.length; index++) {
    const prepared = prepareDraft(drafts[index], { runId, runAttemptId, index, ...limits, secrets });
    // A bad file inside rendered is the model's: that draft ends `model`, the others run.
    if (!prepared.ok && prepared.kind === 'caller') return { index, error: prepared.error };
  }
  return undefined;
}
