import { createHash, randomUUID } from 'node:crypto';
import { leaseIdFor } from '../lease/index.js';
import { MAX_PRODUCER_BYTES, type RolloutDraft } from '../producer/index.js';
import { canonicalJson, parseRolloutSpec, type RolloutSpec } from '../spec/index.js';
import { UsageError } from './errors.js';
import { LineProblems } from './line-problems.js';
import { MSG } from './messages.js';
import type { TaskLine } from './tasks-file.js';

/** Placeholder ids: the real ones are the producer's; a draft is checked as a spec with these. */
const PLACEHOLDER = { v: 1, runId: 'check', leaseId: 'check.draft', runAttemptId: 'check' } as const;

/** The `run` option a spec field comes from, when every draft shares it (else it is the task line's). */
const OPTION_OF: ReadonlyArray<readonly [string, string]> = [
  ['timeouts.runMs', '--run-ms'],
  ['timeouts.rewardMs', '--reward-ms'],
  ['timeouts.hangMs', '--hang-ms'],
  ['sandbox.memoryMb', '--memory-mb'],
  ['sandbox.env', '--env'],
  ['sandbox.fingerprint', '--fingerprint'],
  ['run', '--run/--run-config'],
  ['reward', '--reward/--reward-config'],
  ['rendered', '--artifact'],
  ['class', '--class'],
];

/**
 * Checks every draft against the spec schema the producer applies (`parseRolloutSpec`) before
 * anything touches Redis, so a bad option value or task line is a usage error (exit 2) naming
 * the option or `file:line`, never a `caller` Result per lease after enqueueing. A task line's
 * `placement` must be an object of labels (a string or array was silently dropped before).
 * @param problems where each bad task line goes, reported with the other checks' (see
 *   LineProblems); without it they are reported here.
 * @returns the parsed specs (defaults filled), in draft order, for {@link specsFingerprint}; with
 *   `problems` holding lines, only the specs of the other lines (the caller reports and stops).
 * @throws UsageError naming the option, the field and zod's reason, at once: an option's value is
 *   the same on every line; or (without `problems`) every task line refused, naming `file:line`.
 */
export function checkDrafts(file: string, tasks: readonly TaskLine[], drafts: readonly RolloutDraft[], problems?: LineProblems): RolloutSpec[] {
  const found = problems ?? new LineProblems(file);
  const specs: RolloutSpec[] = [];
  drafts.forEach((draft, i) => {
    const line = tasks[i]?.line ?? i + 1;
    if (found.has(line)) return;
    const own = (tasks[i]?.task as { placement?: unknown } | undefined)?.placement;
    if (own !== undefined && (own === null || typeof own !== 'object' || Array.isArray(own))) {
      found.add(line, MSG.taskPlacementNotObject(file, line));
      return;
    }
    const { taskKey: _key, ...spec } = draft;
    const parsed = parseRolloutSpec({ ...spec, ...PLACEHOLDER });
    if (parsed.success) {
      specs.push(parsed.data);
      return;
    }
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') ?? '';
    const option = OPTION_OF.find(([prefix]) => field === prefix || field.startsWith(`${prefix}.`))?.[1];
    if (option) throw new UsageError(MSG.optionRefusedBySpec(option, field, issue?.message ?? 'invalid'));
    found.add(line, MSG.taskRefusedBySpec(file, line, field, issue?.message ?? 'invalid'));
  });
  if (!problems) found.throwIfAny();
  return specs;
}

/**
 * Checks every spec against the producer's `maxSpecBytes` (`--max-spec-bytes`) before anything
 * touches Redis, measured as the producer measures it (`prepareDraft`: the spec's JSON, UTF-8,
 * with the run id, the lease id and a run attempt UUID it gives), so an artifact too big for a
 * spec is a usage error (exit 2) naming `--artifact` or the task line that tips it over, not a
 * `caller` Result per lease after the run has started (fresh-user report: a 40 MB artifact). An
 * artifact shared by drafts is measured once.
 * @param specs the specs {@link checkDrafts} returned, in draft order.
 * @throws UsageError naming `--artifact` (when the smallest spec of that artifact is over) or the
 *   `file:line` of the largest spec, its size (the `--max-spec-bytes` that fits every spec), the limit and the fix.
 */
export function checkSpecBytes(file: string, tasks: readonly TaskLine[], drafts: readonly RolloutDraft[], specs: readonly RolloutSpec[], runId: string, limit: number): void {
  const runAttemptId = randomUUID();
  const renderedBytes = new Map<unknown, number>();
  const sizes = specs.map((spec, i) => {
    const draft = drafts[i];
    const rendered = draft?.rendered;
    let artifact = renderedBytes.get(rendered);
    if (artifact === undefined) renderedBytes.set(rendered, (artifact = Buffer.byteLength(JSON.stringify(spec.rendered), 'utf8')));
    const leaseId = leaseIdFor(runId, draft?.taskKey ?? i);
    // `rendered: null` keeps the key where it was: its 4 bytes are swapped for the artifact's.
    return Buffer.byteLength(JSON.stringify({ ...spec, runId, leaseId, runAttemptId, rendered: null }), 'utf8') - 4 + artifact;
  });
  // The largest spec: the value it suggests must fit every task (fresh-user report: one
  // suggestion per task line, each a few bytes more than the last).
  const bytes = Math.max(...sizes);
  if (bytes <= limit) return;
  const over = sizes.indexOf(bytes);
  const rendered = drafts[over]?.rendered;
  const smallestOfArtifact = Math.min(...sizes.filter((_, i) => drafts[i]?.rendered === rendered));
  const by = smallestOfArtifact > limit ? '--artifact' : `${file}:${tasks[over]?.line ?? over + 1}`;
  throw new UsageError(MSG.specTooBig(by, bytes, limit, MAX_PRODUCER_BYTES));
}

/** A spec's fields beside its task and artifact, as they act: `sandbox.env` is a set of names (order and repeats mean nothing). */
function sharedOf(spec: RolloutSpec): unknown {
  const { task: _task, rendered: _rendered, leaseId: _lease, runId: _run, runAttemptId: _attempt, v: _v, ...rest } = spec;
  return { ...rest, sandbox: { ...rest.sandbox, env: [...new Set(rest.sandbox.env)].sort() } };
}

/**
 * A fingerprint of what a run's specs are, as they act: `<tasks>.<inputs>`, each 128 bits of
 * SHA-256 in hex, of the tasks (each task key and task, in order) and of everything else
 * (artifact, Refs and configs, timeouts, sandbox, placement, class). Specs are taken parsed, so
 * a spec value given explicitly and the same default left out, JSON keys in another order and
 * `--env` names in another order or repeated fingerprint the same; a changed task, artifact, Ref
 * or option does not. A Ref's config is taken as given (key order aside): a factory default
 * written out (`"maxOutputBytes": 1048576`) counts as a change. What
 * `MapRolloutsOptions.sourceFingerprint` stores for `run`.
 */
export function specsFingerprint(drafts: readonly RolloutDraft[], specs: readonly RolloutSpec[]): string {
  const tasks = createHash('sha256');
  const inputs = createHash('sha256');
  let lastShared = '';
  let lastRendered: unknown;
  specs.forEach((spec, i) => {
    const draft = drafts[i];
    tasks.update(`${canonicalJson(draft?.taskKey ?? i)}:${canonicalJson(spec.task)}\n`);
    // Drafts share one artifact object: hashed again only where it changes (it may be megabytes).
    if (i === 0 || draft?.rendered !== lastRendered) inputs.update(`${i}:rendered:${canonicalJson(spec.rendered)}\n`);
    lastRendered = draft?.rendered;
    const shared = canonicalJson(sharedOf(spec));
    if (shared !== lastShared) inputs.update(`${i}:${shared}\n`);
    lastShared = shared;
  });
  return `${tasks.digest('hex').slice(0, 32)}.${inputs.digest('hex').slice(0, 32)}`;
}

/** Which half of two {@link specsFingerprint}s differs: `tasks`, `inputs` (anything else), or both. */
export function fingerprintDifference(stored: string, now: string): 'tasks' | 'inputs' | 'tasks and inputs' {
  const [storedTasks, storedInputs] = stored.split('.');
  const [nowTasks, nowInputs] = now.split('.');
  const tasks = storedTasks !== nowTasks;
  const inputs = storedInputs !== nowInputs;
  return tasks && inputs ? 'tasks and inputs' : tasks ? 'tasks' : 'inputs';
}
