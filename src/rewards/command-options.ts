import { CallerError } from '../spec/errors.js';
import { normalizeRelativePath } from '../runners/relative-path.js';
import { configRecord, describeValue, optionalBoolean } from './config-check.js';
import { DEFAULT_GOLD_KEY } from './gold-key.js';

/** Default of {@link CommandRewardOptions.timeoutMs}: 30 000 ms, below the spec's default `timeouts.rewardMs` (60 000). */
export const DEFAULT_JUDGE_TIMEOUT_MS = 30_000;
/** Upper bound of {@link CommandRewardOptions.timeoutMs}: 24 h, as a spec's `timeouts.rewardMs`. */
export const MAX_JUDGE_TIMEOUT_MS = 86_400_000;
/** Most files a command reward may ship in `files`. */
export const MAX_JUDGE_FILES = 64;

/**
 * Config of {@link command} (`rollout-queue/rewards:command`): plain JSON, as a Ref's config.
 */
export interface CommandRewardOptions {
  /**
   * The judge program and its arguments, run in the judge's own fresh directory: a program
   * installed on the worker (`["python3", "-m", "mypkg.judge"]`; looked up on the judge's PATH,
   * the worker's interpreters first) or one of `files` (`["python3", "judge.py"]`, or
   * `["./judge"]` for a file with a `#!` line, made executable). Required, non-empty.
   */
  readonly command: readonly string[];
  /**
   * Files written to the judge's directory before it starts: relative path → text (e.g.
   * `{"judge.py": "..."}`). Default none. Never visible to the run: they live in the reward's
   * Ref, and the judge's directory is made after the run's program is gone.
   */
  readonly files?: Readonly<Record<string, string>>;
  /**
   * The judge's own wall-clock limit, ms. Default 30 000, bounds 1–86 400 000. Past it its
   * process tree is killed and the rollout ends `model` / `RewardTimeout`. The spec's
   * `timeouts.rewardMs` bounds it too: keep `timeoutMs` below it.
   */
  readonly timeoutMs?: number;
  /**
   * Memory over the judge's whole process tree, MiB. Default: the spec's `sandbox.memoryMb`;
   * at most that (a reward runs inside its rollout's limits).
   */
  readonly memoryMb?: number;
  /**
   * Task keys the judge scores against (its gold): removed from the task the run receives, as
   * the built-in rewards' `goldKey` is. A string or an array of strings; default `["answer"]`;
   * `[]` declares none. The judge always receives the whole task.
   */
  readonly goldKeys?: string | readonly string[];
  /**
   * Hand the judge a copy of the files the run's program left in its work dir, under
   * `artifact/` in the judge's directory (`artifact/main.py`, `artifact/out.txt`). Default
   * false: the judge sees only the run's `output`. Only a run that runs a program (codeRunner)
   * leaves files; a copy, so the judge changes nothing of the run's.
   */
  readonly seeWorkDir?: boolean;
}

/** {@link CommandRewardOptions} checked and defaulted. */
export interface CompiledCommandRewardOptions {
  readonly command: readonly [string, ...string[]];
  /** Normalized relative path → text. */
  readonly files: ReadonlyMap<string, string>;
  /** The file of `files` that `command[0]` names (made executable and run by its path), if any. */
  readonly programFile: string | undefined;
  readonly timeoutMs: number;
  readonly memoryMb: number | undefined;
  readonly goldKeys: readonly string[];
  readonly seeWorkDir: boolean;
}

const FACTORY = 'command';
/** The keys a command reward's config may have. */
export const COMMAND_REWARD_OPTION_KEYS = ['command', 'files', 'timeoutMs', 'memoryMb', 'goldKeys', 'seeWorkDir'] as const;
/** Where a `seeWorkDir` judge finds the run's files, in its own directory. */
export const WORK_DIR_COPY = 'artifact';
const COMMAND_FIX = 'give the judge program and its arguments, e.g. ["python3", "judge.py"] or ["python3", "-m", "mypkg.judge"]';

/**
 * Checks a command reward's config once, at factory time.
 * @throws CallerError naming the field, the bad value and the fix.
 */
export function compileCommandRewardOptions(config: unknown): CompiledCommandRewardOptions {
  // No config at all is the same mistake as a config without `command`: say what to give.
  const record = configRecord(FACTORY, config === null ? undefined : config, COMMAND_REWARD_OPTION_KEYS);
  if (record.command === undefined) {
    throw new CallerError(`${FACTORY}: config.command is required; ${COMMAND_FIX}`);
  }
  const command = checkCommand(record.command);
  const files = checkFiles(record.files);
  const seeWorkDir = optionalBoolean(FACTORY, record, 'seeWorkDir', false);
  const clash = seeWorkDir ? [...files.keys()].find((file) => file === WORK_DIR_COPY || file.startsWith(`${WORK_DIR_COPY}/`)) : undefined;
  if (clash !== undefined) {
    throw new CallerError(`${FACTORY}: config.files has ${JSON.stringify(clash)}, but with seeWorkDir the run's files go under ${WORK_DIR_COPY}/; move the judge's file elsewhere`);
  }
  const program = normalizeRelativePath(command[0]);
  const programFile = 'path' in program && files.has(program.path) ? program.path : undefined;
  return Object.freeze({
    command,
    files,
    programFile,
    timeoutMs: integer(record, 'timeoutMs', 1, MAX_JUDGE_TIMEOUT_MS, 'milliseconds', `the default ${DEFAULT_JUDGE_TIMEOUT_MS}`) ?? DEFAULT_JUDGE_TIMEOUT_MS,
    memoryMb: integer(record, 'memoryMb', 16, 1_048_576, 'MiB', "the spec's sandbox.memoryMb"),
    goldKeys: checkGoldKeys(record.goldKeys),
    seeWorkDir,
  });
}

function checkCommand(value: unknown): readonly [string, ...string[]] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new CallerError(`${FACTORY}: config.command must be a non-empty array of strings, got ${describeValue(value)}; ${COMMAND_FIX}`);
  }
  value.forEach((part: unknown, i) => {
    if (typeof part !== 'string' || part.includes('\0') || (i === 0 && part.trim().length === 0)) {
      throw new CallerError(`${FACTORY}: config.command[${i}] must be a string${i === 0 ? ' naming a program' : ''} without NUL bytes, got ${describeValue(part)}; ${COMMAND_FIX}`);
    }
  });
  return Object.freeze([...(value as string[])]) as unknown as readonly [string, ...string[]];
}

function checkFiles(value: unknown): ReadonlyMap<string, string> {
  const files = new Map<string, string>();
  if (value === undefined) return files;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CallerError(`${FACTORY}: config.files must be an object of relative path → file text, like {"judge.py": "print(1)"}, got ${describeValue(value)}`);
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_JUDGE_FILES) throw new CallerError(`${FACTORY}: config.files holds ${entries.length} files, more than ${MAX_JUDGE_FILES}; install a larger judge on the workers and run it with ["python3", "-m", ...]`);
  for (const [raw, text] of entries) {
    const checked = normalizeRelativePath(raw);
    if ('problem' in checked) throw new CallerError(`${FACTORY}: config.files path ${JSON.stringify(raw)} ${checked.problem}`);
    if (typeof text !== 'string') throw new CallerError(`${FACTORY}: config.files[${JSON.stringify(raw)}] must be the file's text, got ${describeValue(text)}`);
    if (files.has(checked.path)) throw new CallerError(`${FACTORY}: config.files has two paths for ${JSON.stringify(checked.path)}; keep one`);
    files.set(checked.path, text);
  }
  for (const file of files.keys()) {
    for (let dir = file.slice(0, file.lastIndexOf('/')); dir.length > 0; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/')))) {
      if (files.has(dir)) throw new CallerError(`${FACTORY}: config.files has ${JSON.stringify(dir)} both as a file and as the directory of ${JSON.stringify(file)}`);
    }
  }
  return files;
}

function integer(record: Record<string, unknown>, key: string, min: number, max: number, unit: string, fallback: string): number | undefined {
  const value = record[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new CallerError(`${FACTORY}: config.${key} must be an integer number of ${unit} from ${min} to ${max}, got ${describeValue(value)}; omit it for ${fallback}`);
  }
  return value;
}

function checkGoldKeys(value: unknown): readonly string[] {
  if (value === undefined) return [DEFAULT_GOLD_KEY];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every((key): key is string => typeof key === 'string' && key.length > 0)) {
    throw new CallerError(`${FACTORY}: config.goldKeys must be a task key or an array of task keys (non-empty strings) the judge scores against, got ${describeValue(value)}; use [] when the task holds no gold`);
  }
  return Object.freeze([...list]);
}
