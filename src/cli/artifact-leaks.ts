import { realpathSync } from 'node:fs';
import path from 'node:path';
import { goldKeyOf } from '../rewards/gold-key.js';
import { goldKeysOfConfig, parseRefTarget, type Ref, type Rendered } from '../spec/index.js';
import { SKIPPED_ARTIFACT_DIRS } from './artifact.js';
import { UsageError } from './errors.js';
import { MSG } from './messages.js';
import type { TaskLine } from './tasks-file.js';

/** What {@link refuseArtifactLeaks} compares: the run's inputs as the user named them. */
export interface ArtifactLeakInputs {
  /** `--artifact` as given (a file or a directory). */
  readonly artifactPath: string;
  /** The artifact as loaded (`loadArtifact`): a file's text, or a directory's files by relative path. */
  readonly rendered: Rendered;
  /** `--tasks` as given, and its tasks. */
  readonly tasksFile: string;
  readonly tasks: readonly TaskLine[];
  /** The results file the run writes (`--out`, or its default), as given. */
  readonly outFile: string;
  /** The `--reward` Ref (its config names the gold key of any reward that takes `goldKey(s)`). */
  readonly reward: Ref;
  /** `--gold-key` keys. */
  readonly goldKeys?: readonly string[];
}

/**
 * Refuses, before anything is enqueued, an artifact that would ship the run's gold to the program
 * under test (fresh-user report: README put `tasks.jsonl` in `my-run/` and offered
 * `--artifact my-run/`; solve.py read ./tasks.jsonl and scored 1 on every task). The worker keeps
 * the gold out of the task on stdin (docs/gold.md), but every file of a directory artifact is
 * written beside the program, so three ways in are checked:
 * - the tasks file lies inside the directory artifact (or is the artifact file);
 * - the results file (`--out`) does: a re-attach with `--run-id` or the next run would ship the
 *   earlier Results, whose rewards say which outputs were right;
 * - a file of the artifact (any name) holds a line that is a Result (a JSON object with string
 *   `leaseId`, `runId` and `kind`), or a line that is one of the run's tasks with its gold: a JSON
 *   object carrying a gold key with that task's gold value and at least one other key with the
 *   same value as that task (its `id`, its inputs). A gold value alone is not enough: small
 *   numbers such as 4 appear in any few-shot example; a task's gold beside its id or inputs is the
 *   task. The check reads the text already loaded, so it costs one pass over the artifact's lines.
 * Gold keys: `--gold-key`, the reward config's `goldKey(s)`/`gold_key(s)`, and a built-in
 * reward's default (`answer`). A reward module's own declared keys are not loaded here.
 * Files under `node_modules`/`.git` are not sent, so a tasks or results file there is not refused.
 * @throws UsageError naming the file, why it leaks and the fix (move it out of the artifact
 *   directory, or pass the program's own sub-directory as `--artifact`).
 */
export function refuseArtifactLeaks(inputs: ArtifactLeakInputs): void {
  const { artifactPath, rendered } = inputs;
  for (const [flag, file] of [['--tasks', inputs.tasksFile], ['--out', inputs.outFile]] as const) {
    if (isShipped(artifactPath, rendered, file)) throw new UsageError(MSG.artifactHoldsRunFile(artifactPath, flag, file));
  }
  // A content-addressed artifact (`{ sha256 }`) has no text here; `loadArtifact` never makes one.
  const files: Record<string, string> = typeof rendered === 'string' ? { [path.basename(artifactPath)]: rendered } : 'files' in rendered ? rendered.files : {};
  const gold = goldIndex(inputs.tasks, runGoldKeys(inputs.reward, inputs.goldKeys ?? []));
  for (const [name, text] of Object.entries(files)) {
    const shown = typeof rendered === 'string' ? artifactPath : path.join(artifactPath, name);
    const leak = leakIn(text, gold);
    if (leak) throw new UsageError(MSG.artifactHoldsGold(artifactPath, shown, leak.line, leak.what));
  }
}

/** The task keys the run keeps from the program: `--gold-key`, the reward config's, a built-in reward's default. */
function runGoldKeys(reward: Ref, goldKeys: readonly string[]): string[] {
  const keys = new Set<string>([...goldKeys, ...goldKeysOfConfig(reward.config)]);
  const target = parseRefTarget(reward.$ref);
  if (typeof target !== 'string' && target.module === 'rollout-queue/rewards') {
    const builtin = goldKeyOf(target.exportName, reward.config);
    if (builtin !== undefined) keys.add(builtin);
  }
  return [...keys];
}

/** Gold key + JSON of its value → the tasks holding that gold. */
type GoldIndex = Map<string, Record<string, unknown>[]>;

function goldIndex(tasks: readonly TaskLine[], keys: readonly string[]): GoldIndex {
  const index: GoldIndex = new Map();
  for (const { task } of tasks) {
    for (const key of keys) {
      const value = task[key];
      if (value === undefined || value === null) continue;
      const at = goldEntry(key, value);
      const list = index.get(at);
      if (list) list.push(task);
      else index.set(at, [task]);
    }
  }
  return index;
}

function goldEntry(key: string, value: unknown): string {
  return `${key}\u0000${JSON.stringify(value)}`;
}

/** The first line of `text` that is a Result or a task of the run with its gold, 1-based. */
function leakIn(text: string, gold: GoldIndex): { line: number; what: 'results' | 'gold' } | undefined {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const raw = lines[i]?.trim() ?? '';
    if (!raw.startsWith('{')) continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      continue;
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) continue;
    const line = value as Record<string, unknown>;
    if (typeof line.leaseId === 'string' && typeof line.runId === 'string' && typeof line.kind === 'string') return { line: i + 1, what: 'results' };
    if (carriesGold(line, gold)) return { line: i + 1, what: 'gold' };
  }
  return undefined;
}

/** True when `line` holds some task's gold value at its gold key and shares another key's value with that task. */
function carriesGold(line: Record<string, unknown>, gold: GoldIndex): boolean {
  for (const [key, value] of Object.entries(line)) {
    const tasks = gold.get(goldEntry(key, value));
    if (!tasks) continue;
    for (const task of tasks) {
      const shared = Object.entries(task).some(([other, taskValue]) => other !== key && Object.hasOwn(line, other) && JSON.stringify(line[other]) === JSON.stringify(taskValue));
      if (shared) return true;
    }
  }
  return false;
}

/**
 * Whether `file` would be sent with the artifact: it is the artifact file, or lies below the
 * artifact directory outside `node_modules`/`.git`. Compared by real path (symbolic links and
 * `..` resolved); a file not created yet is placed by its directory's real path.
 */
function isShipped(artifactPath: string, rendered: Rendered, file: string): boolean {
  const artifact = realPath(artifactPath);
  const target = realPath(file);
  if (typeof rendered === 'string') return artifact === target;
  const relative = path.relative(artifact, target);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return false;
  return !relative.split(path.sep).slice(0, -1).some((part) => SKIPPED_ARTIFACT_DIRS.has(part));
}

/** The real path of `file`, or of its nearest existing ancestor joined with the rest. */
function realPath(file: string): string {
  const absolute = path.resolve(file);
  try {
    return realpathSync(absolute);
  } catch {
    const parent = path.dirname(absolute);
    return parent === absolute ? absolute : path.join(realPath(parent), path.basename(absolute));
  }
}
