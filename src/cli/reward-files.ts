import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from './errors.js';

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
