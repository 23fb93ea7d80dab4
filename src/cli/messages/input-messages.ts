import { DEFAULT_MAX_SPEC_BYTES } from '../../producer/index.js';
import { shellWord } from '../cli-command.js';

/** Errors about input files (--tasks lines as `file:line`, --artifact, the demo's examples); "Nothing was enqueued" where that holds. */
export const INPUT_MSG = {
  /** Several bad lines of a tasks file (`shown`: the first ones' own messages, each `file:line: …`), reported at once. */
  taskLinesRefused: (file: string, count: number, shown: readonly string[]) =>
    `--tasks ${file} has ${count} bad lines; nothing was enqueued. Fix them all, then run again:\n` +
    shown.map((message) => `  ${message.replace(/ Nothing was enqueued\.$/, '')}`).join('\n') +
    (count > shown.length ? `\n  … and ${count - shown.length} more bad line(s) (the first ${shown.length} are shown)` : ''),
  tasksUnreadable: (file: string, why: string) => `cannot read --tasks ${file}: ${why}`,
  tasksEmpty: (file: string) => `--tasks ${file} holds no tasks (it is empty or only blank lines); write one JSON object per line, e.g. {"id": "t1", "answer": 42}. Nothing was enqueued.`,
  taskNotJson: (file: string, line: number, why: string) => `${file}:${line}: not valid JSON (${why}); each line must be one JSON object. Nothing was enqueued.`,
  taskNotUtf8: (file: string, line: number, column: number, byte: number) =>
    `${file}:${line}: not UTF-8 text (byte ${column} of the line, 0x${byte.toString(16).padStart(2, '0')}, begins no valid UTF-8 sequence); save the file as UTF-8. Nothing was enqueued.`,
  taskNotObject: (file: string, line: number, got: string) => `${file}:${line}: expected a JSON object, got ${got}. Nothing was enqueued.`,
  taskInvalid: (file: string, line: number, why: string) => `${file}:${line}: ${why}. Nothing was enqueued.`,
  taskTooBig: (file: string, line: number, bytes: number, limit: number) =>
    `${file}:${line}: the task is ${bytes} bytes as JSON, over the ${limit}-byte task limit; keep large inputs out of the task (put them where the worker can read them and pass their path or key). Nothing was enqueued.`,
  taskMetaInvalid: (file: string, line: number, why: string) =>
    `${file}:${line}: "$meta" (the line's own tag, returned on its Result as meta, never part of the task): ${why}. Nothing was enqueued.`,
  taskEmptyId: (file: string, line: number) =>
    `${file}:${line}: task.id is empty; give it a non-empty id or remove it to use the line number. Nothing was enqueued.`,
  /**
   * Two lines share a lease key. A task without an id is keyed by its line number, so either
   * side may be a line number rather than an id: the message says which, and what to change.
   */
  taskDuplicate: (file: string, line: number, key: string, first: { line: number; byId: boolean }, byId: boolean) =>
    `${file}:${line}: ${
      byId
        ? first.byId
          ? `task id "${key}" repeats line ${first.line}`
          : `task id "${key}" is the key of line ${first.line}, a task without an id (it is named by its line number)`
        : `this task has no id, so it is named by its line number "${key}", which line ${first.line} already uses as its task id`
    }; task ids name leases and must be unique within a run: give ${byId && first.byId ? 'one of them another id' : 'the task without an id an id of its own'}. Nothing was enqueued.`,
  /**
   * A task line lacks the gold answer a built-in reward reads (`reward`: its `$ref`). `keys`: the
   * task's keys as listed; `suggestion`: one of them close to `goldKey`; `fixConfig`: the
   * --reward-config JSON with `goldKey` set to the suggestion (or `KEY`); `lacking` of `total`
   * tasks have no gold answer: when only some do, only adding the field fixes it.
   */
  taskNoGold: (
    file: string,
    line: number,
    gold: { reward: string; goldKey: string; isNull: boolean; keys: string; suggestion: string | undefined; fixConfig: string; lacking: number; total: number },
  ) => {
    const { reward, goldKey, suggestion, lacking, total } = gold;
    const key = JSON.stringify(goldKey);
    const where = lacking === total ? 'every task' : lacking === 1 ? 'this task' : `the ${lacking} tasks that lack it`;
    // A null is there already: it needs a value, not adding (fresh-user report, helper-33).
    const addIt = gold.isNull ? `give ${key} a string, number or boolean in ${where}` : `add ${key} to ${where}`;
    // Another goldKey fixes only tasks that all lack this one: where some hold it, a near key in
    // this task is the task's own misspelling (fresh-user report, helper-33: the suggested
    // --reward-config would have broken every other line).
    const fix =
      suggestion !== undefined && lacking === total
        ? `did you mean ${JSON.stringify(suggestion)}? pass --reward-config ${shellWord(gold.fixConfig)}, or ${addIt}`
        : suggestion !== undefined
          ? `rename ${JSON.stringify(suggestion)} to ${key} in this task, or ${addIt}`
          : lacking === total && !gold.isNull
            ? `add ${key} to every task, or pass --reward-config ${shellWord(gold.fixConfig)} with the key that holds the answer`
            : addIt;
    const count = total === 1 ? '' : lacking === total ? `; all ${total} tasks lack it` : `; ${lacking} of ${total} tasks lack it`;
    return (
      `${file}:${line}: --reward ${reward} reads the gold answer at task.${goldKey}, and ${gold.isNull ? `this task's ${key} is null` : `this task has no ${key}`} ` +
      `(task keys: ${gold.keys}${count}); ${fix}. Nothing was enqueued.`
    );
  },
  /** A task line's gold answer is an object or array (`got`, e.g. `an array of 2`); `reward` as in taskNoGold. */
  taskGoldNotScalar: (file: string, line: number, reward: string, goldKey: string, got: string) =>
    `${file}:${line}: --reward ${reward} reads the gold answer at task.${goldKey}, which holds ${got}; it must be a string, number or boolean: put the answer there as text. Nothing was enqueued.`,
  taskGoldNotNumber: (file: string, line: number, reward: string, goldKey: string, got: string) =>
    `${file}:${line}: --reward ${reward} compares numbers, and task.${goldKey} is ${got}; put a number there (or a numeric string like "1,234"), or use --reward rollout-queue/rewards:exactMatch or :contains for text answers. Nothing was enqueued.`,
  artifactMissing: (file: string, why: string) => `cannot read --artifact ${file}: ${why}`,
  artifactBinary: (file: string) =>
    `--artifact: ${file} is not valid UTF-8 text; binary files are not supported in rendered.files. Put binary data where the worker can read it, or base64 it and decode it in the artifact`,
  artifactSymlink: (link: string) =>
    `--artifact: ${link} is a symbolic link; links are not sent with an artifact. Replace it with a copy of its target, or remove it`,
  /** `file` (the tasks or results file) would be sent with the artifact: the program could read the gold. */
  artifactHoldsRunFile: (artifact: string, flag: '--tasks' | '--out', file: string) =>
    `--artifact ${artifact} would send ${flag} ${file} to the program under test (${flag === '--tasks' ? "the tasks' gold answers" : 'the Results, whose rewards say which outputs were right'}): ` +
    `move ${file} out of ${artifact}, or put the program in a directory of its own (e.g. my-run/program/) and pass that as --artifact. Nothing was enqueued.`,
  /** A file of the artifact holds a Result line or a task line with its gold (`line` 1-based). */
  artifactHoldsGold: (artifact: string, file: string, line: number, what: 'results' | 'gold') =>
    `--artifact ${artifact} would send ${file} to the program under test, and its line ${line} is ${what === 'results' ? 'a Result of an earlier run (its reward says whether the output was right)' : "a task of this run with its gold answer"}: ` +
    `move ${file} out of ${artifact}, or put the program in a directory of its own and pass that as --artifact. Nothing was enqueued.`,
  artifactEmpty: (dir: string) => `--artifact ${dir} is a directory without files (node_modules and .git are skipped)`,
  /** A spec over `--max-spec-bytes`: `by` is what makes it big (the artifact, or a task line as `file:line`). */
  specTooBig: (by: string, bytes: number, limit: number, max: number) =>
    `${by}: the largest rollout spec (the artifact, the task and the options, as JSON) would be ${bytes} bytes, over --max-spec-bytes ${limit}${limit === DEFAULT_MAX_SPEC_BYTES ? ' (the default)' : ''}; ${
      bytes <= max ? `pass --max-spec-bytes ${bytes} or more (at most ${max}), ` : `the most --max-spec-bytes allows is ${max}, so `
    }or keep large data out of the artifact (put it where the worker can read it and pass its path or key). Nothing was enqueued.`,
  demoTooFewTasks: (count: number, held: number, file: string) =>
    `--tasks ${count}: ${file} holds ${held} task(s); pass --tasks ${held} or fewer (or add tasks to the file)`,
  exampleMissing: (file: string) => `${file} is missing; the demo runs from a clone of rollout-queue (examples/ is not in the npm package)`,
  exampleInvalid: (file: string, why: string) => `${file}: ${why}`,
} as const;
