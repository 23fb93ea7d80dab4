import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { normalizeRelativePath } from '../runners/relative-path.js';
import { WORK_DIR_COPY } from '../rewards/command-options.js';
import { UsageError } from './errors.js';
import { MSG } from './messages.js';

/** The reward whose config takes `files` (the program reward). */
export const COMMAND_REWARD = 'rollout-queue/rewards:command';

/**
 * `run --reward-file <path...>`: the judge's files read from disk into the command reward's
 * `config.files`, each under its base name (`--reward-file judge/judge.py` ships `judge.py`), so
 * `--reward-config '{"command": ["python3", "judge.py"]}'` runs it. Spares quoting a whole
 * program inside a JSON argument.
 * @param config the parsed `--reward-config`.
 * @returns `config` with `files` added (a copy); `config` itself when no file is given.
 * @throws UsageError when `--reward` is not the command reward, a file cannot be read as text,
 *   or two files (or a file and `config.files`) share a name.
 */
export async function withRewardFiles(reward: string, config: Record<string, unknown>, files: readonly string[] | undefined): Promise<Record<string, unknown>> {
  if (!files || files.length === 0) return config;
  if (reward !== COMMAND_REWARD) {
    throw new UsageError(`--reward-file ships a judge's files to the program reward; use it with --reward ${COMMAND_REWARD} (got --reward ${reward})`);
  }
  const existing = config.files;
  if (existing !== undefined && (existing === null || typeof existing !== 'object' || Array.isArray(existing))) {
    throw new UsageError('--reward-config: files must be an object of relative path → file text, like {"judge.py": "print(1)"}');
  }
  const merged: Record<string, unknown> = { ...(existing as Record<string, unknown> | undefined) };
  for (const file of files) {
    const name = path.basename(file);
    if (Object.hasOwn(merged, name)) {
      throw new UsageError(`--reward-file ${file}: the judge already has a file named ${JSON.stringify(name)} (from another --reward-file or --reward-config's files); give each file a distinct name`);
    }
    try {
      merged[name] = await readFile(file, 'utf8');
    } catch (err) {
      throw new UsageError(`--reward-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give the path of the judge's file`);
    }
  }
  return { ...config, files: merged };
}

/**
 * Refuses a command reward whose `command` names a judge's file that exists here (relative to
 * `cwd`) but is not shipped in `config.files` (fresh-user report: `--reward-config
 * '{"command": ["python3", "judge.py"]}'` without `--reward-file judge.py` enqueued every
 * rollout, and each ended `model` / `RewardThrew:NonZeroExit`, "can't open file", exit 0: the
 * judge runs in a fresh directory on the worker, where only the shipped files are). Only
 * arguments that name a regular file on this machine count, so interpreter names (`python3`),
 * flags and module names pass; absolute paths pass (they name the worker's own files); with
 * `seeWorkDir`, paths under `artifact/` pass (the run's files are copied there).
 * @param config the reward config with `--reward-file`'s files already merged in (see {@link withRewardFiles}).
 * @throws UsageError naming the argument, the file and the fix.
 */
export function refuseUnshippedJudgeFiles(reward: string, config: Record<string, unknown>, cwd: string = process.cwd()): void {
  if (reward !== COMMAND_REWARD || !Array.isArray(config.command)) return;
  const files = config.files !== null && typeof config.files === 'object' && !Array.isArray(config.files) ? Object.keys(config.files) : [];
  const shipped = new Set(files.map((file) => normalizedPath(file)).filter((file): file is string => file !== undefined));
  const seeWorkDir = config.seeWorkDir === true;
  config.command.forEach((arg: unknown, i) => {
    if (typeof arg !== 'string' || arg.startsWith('-')) return;
    const rel = normalizedPath(arg);
    if (rel === undefined || shipped.has(rel)) return;
    if (seeWorkDir && rel.startsWith(`${WORK_DIR_COPY}/`)) return;
    if (!isLocalFile(path.resolve(cwd, rel))) return;
    // A file of that base name is shipped: the command names it by another path than its name in the judge's directory.
    const base = path.basename(rel);
    throw new UsageError(MSG.judgeFileNotShipped(i, arg, shipped.has(base) ? base : undefined));
  });
}

/** `raw` as a normalized relative path, or undefined when it is not one (absolute, empty, leaving through `..`). */
function normalizedPath(raw: string): string | undefined {
  const checked = normalizeRelativePath(raw);
  return 'path' in checked ? checked.path : undefined;
}

function isLocalFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
