import { DEFAULT_MAX_TASK_BYTES } from '../producer/index.js';
import { readFile } from 'node:fs/promises';
import { findMetaIssue, TaskSchema, type Task } from '../spec/index.js';
import { UsageError } from './errors.js';
import { fileErrorText } from './file-error.js';
import { LineProblems } from './line-problems.js';
import { MSG, typeName } from './messages.js';

/** One task of a tasks file and what names its lease. */
export interface TaskLine {
  /** `task.id` when present, else the 1-based line number. */
  readonly taskKey: string | number;
  readonly task: Task;
  /** 1-based line number in the file, for messages. */
  readonly line: number;
  /** The line's `$meta` (taken out of the task): its draft's `meta`, returned on its Result. */
  readonly meta?: unknown;
}

/**
 * The key of a tasks-file line that holds the line's own tag: taken out of the task (the worker
 * never sees it) and given to its draft as `meta`, so each line's Result carries it.
 */
export const TASK_META_KEY = '$meta';

/** Options of {@link readTasksFile}. */
export interface ReadTasksOptions {
  /** Keep only the first `limit` tasks (the demo's `--tasks N`). */
  readonly limit?: number;
  /** How the file is named in messages (default: the path as given). */
  readonly label?: string;
  /**
   * Where bad lines go: given, every bad line is added there and left out of the result, for the
   * caller to report with the problems of its own later checks (`LineProblems.throwIfAny`);
   * without it they are reported here, all at once.
   */
  readonly problems?: LineProblems;
}

/**
 * Reads a JSONL tasks file: UTF-8 (a leading byte order mark is dropped), one JSON object per
 * line, blank lines skipped.
 * Everything is checked before anything is enqueued, every line: all bad lines are reported at
 * once (see {@link LineProblems}), not the first only.
 * @throws UsageError naming `file:line` of each line that is not JSON, not an object, not valid
 *   task data, too big, or whose key repeats an earlier line (unless `options.problems` takes
 *   them); naming the first byte that is not UTF-8; or when the file holds no task at all.
 */
export async function readTasksFile(file: string, options: ReadTasksOptions = {}): Promise<TaskLine[]> {
  const label = options.label ?? file;
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    throw new UsageError(MSG.tasksUnreadable(label, fileErrorText(err)));
  }
  const text = decodeUtf8(bytes, label);
  const problems = options.problems ?? new LineProblems(label);
  const tasks: TaskLine[] = [];
  /** The first line holding each lease key, and whether that key is its id (else its line number). */
  const firstOf = new Map<string, { line: number; byId: boolean }>();
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index += 1) {
    if (options.limit !== undefined && tasks.length >= options.limit) break;
    const raw = (lines[index] ?? '').trim();
    if (raw === '') continue;
    const line = index + 1;
    const problem = lineProblem(raw, label, line, firstOf);
    if (typeof problem === 'string') problems.add(line, problem);
    else tasks.push(problem);
  }
  if (!options.problems || tasks.length === 0) problems.throwIfAny();
  if (tasks.length === 0) throw new UsageError(MSG.tasksEmpty(label));
  return tasks;
}

/** The task of one non-blank line, or the message saying why the line is refused; records its lease key in `firstOf`. */
function lineProblem(raw: string, label: string, line: number, firstOf: Map<string, { line: number; byId: boolean }>): TaskLine | string {
  const parsed = parseTask(raw, label, line);
  if (typeof parsed === 'string') return parsed;
  const split = takeMeta(parsed, label, line);
  if (typeof split === 'string') return split;
  const { task, meta } = split;
  if (typeof task.id === 'string' && task.id.trim() === '') return MSG.taskEmptyId(label, line);
  // The producer's own limit, checked here too so that an oversized task stops the run before
  // anything is enqueued rather than midway through it.
  const bytes = Buffer.byteLength(JSON.stringify(task), 'utf8');
  if (bytes > DEFAULT_MAX_TASK_BYTES) return MSG.taskTooBig(label, line, bytes, DEFAULT_MAX_TASK_BYTES);
  const byId = typeof task.id === 'string' || typeof task.id === 'number';
  const taskKey = byId ? (task.id as string | number) : line;
  const key = String(taskKey);
  const first = firstOf.get(key);
  if (first !== undefined) return MSG.taskDuplicate(label, line, key, first, byId);
  firstOf.set(key, { line, byId });
  return { taskKey, task, line, ...(meta !== undefined ? { meta } : {}) };
}

/**
 * The file's text. A leading byte order mark is dropped (editors on Windows write one; JSON.parse
 * refused the first line for it). `readFile(file, 'utf8')` turned each invalid byte into U+FFFD
 * and the task ran with text the file never held (fresh-user report).
 * @throws UsageError naming the line and the byte of the first invalid UTF-8 sequence.
 */
function decodeUtf8(bytes: Buffer, label: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    // Only on this error path: feed a streaming decoder byte by byte. It throws at the first byte
    // that cannot continue the sequence begun before it, so the sequence's first byte is named.
    const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    let line = 1;
    let lineStart = 0;
    let sequenceStart = bom;
    for (let at = bom; at < bytes.length; at += 1) {
      const pending = sequenceStart < at;
      try {
        if (decoder.decode(bytes.subarray(at, at + 1), { stream: at + 1 < bytes.length }) !== '') sequenceStart = at + 1;
      } catch {
        const bad = pending ? sequenceStart : at;
        throw new UsageError(MSG.taskNotUtf8(label, line, bad - lineStart + 1, bytes[bad] ?? 0));
      }
      if (bytes[at] === 0x0a) {
        line += 1;
        lineStart = at + 1;
      }
    }
    throw new UsageError(MSG.taskNotUtf8(label, line, sequenceStart - lineStart + 1, bytes[sequenceStart] ?? 0));
  }
}

/**
 * Splits a line's {@link TASK_META_KEY} from its task, or says why the meta is refused (too
 * large, not JSON data), naming `file:line`.
 */
function takeMeta(parsed: Task, label: string, line: number): { task: Task; meta?: unknown } | string {
  if (!Object.hasOwn(parsed, TASK_META_KEY)) return { task: parsed };
  const { [TASK_META_KEY]: meta, ...task } = parsed;
  const issue = findMetaIssue(meta);
  if (issue) return MSG.taskMetaInvalid(label, line, `${issue.path}: ${issue.message}`);
  return { task, meta };
}

/** The line's task, or the message saying why it is none. */
function parseTask(raw: string, label: string, line: number): Task | string {
  let value: unknown;
  try {
    value = JSON.parse(raw) as unknown;
  } catch (err) {
    return MSG.taskNotJson(label, line, (err as Error).message);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return MSG.taskNotObject(label, line, typeName(value));
  const parsed = TaskSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `task.${issue.path.join('.')}: ` : '';
    return MSG.taskInvalid(label, line, `${where}${issue?.message ?? 'invalid task'}`);
  }
  return parsed.data;
}
