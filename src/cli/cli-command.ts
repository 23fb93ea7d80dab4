import { realpathSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_PREFIX } from '../lease/index.js';
import { DEFAULT_REDIS_URL, redactRedisUrl } from '../platform/redis-connection.js';

/** The CLI's entry script (bin/rollout-queue.js): what `process.argv[1]` is when this CLI runs. */
const ENTRY = 'rollout-queue.js';

/** The name the package's `bin` gives the CLI on PATH (package.json). */
export const CLI_NAME = 'rollout-queue';

/**
 * Where the command is looked for: the entry script as run, the PATH and the working directory;
 * and `env`, whose `REDIS_URL` and `ROLLOUT_QUEUE_PREFIX` the command carries (see {@link connectionWords}).
 */
export interface Invocation {
  readonly script: string | undefined;
  readonly pathEnv: string | undefined;
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
}

function realpath(file: string): string | undefined {
  try {
    return realpathSync(file);
  } catch {
    return undefined;
  }
}

/** `text` as one shell word (single-quoted when it holds anything but safe characters). */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * The environment a pasted hint needs to reach the Redis and key prefix of the CLI that printed
 * it: `REDIS_URL=… ROLLOUT_QUEUE_PREFIX=… ` (each only when set to other than its default, the URL
 * with its password as `***`, never the secret: the user puts it back), or `''`. Without them a
 * hint pasted into another shell went to redis://127.0.0.1:6379 and prefix `rq` (fresh-user
 * reports: `no run "…"`, and a worker started against another Redis). A blank `REDIS_URL` is the
 * default, as the CLI reads it (`cliEnvironment`).
 */
export function connectionWords(env: NodeJS.ProcessEnv): string {
  const url = env.REDIS_URL?.trim();
  const prefix = env.ROLLOUT_QUEUE_PREFIX;
  const words: string[] = [];
  if (url && url !== DEFAULT_REDIS_URL) words.push(`REDIS_URL=${shellWord(redactRedisUrl(url))}`);
  if (prefix && prefix !== DEFAULT_PREFIX) words.push(`ROLLOUT_QUEUE_PREFIX=${shellWord(prefix)}`);
  return words.map((word) => `${word} `).join('');
}

/**
 * How a hint the user may paste (resume, cancel, status…) invokes the CLI that prints it,
 * after the {@link connectionWords} of `env`:
 * `rollout-queue` when that name on PATH is this very entry script (`npm link`, an install, npx),
 * or when something other than the CLI runs (a test, a library); else `node bin/rollout-queue.js`
 * from the clone's root and `node <absolute path>` from anywhere else: from a fresh clone, where
 * nothing puts `rollout-queue` on PATH, the hint works as pasted.
 */
export function cliCommandFor({ script, pathEnv, cwd, env = {} }: Invocation): string {
  return `${connectionWords(env)}${commandFor(script, pathEnv, cwd)}`;
}

function commandFor(script: string | undefined, pathEnv: string | undefined, cwd: string): string {
  const real = script === undefined ? undefined : realpath(script);
  if (real === undefined || path.basename(real) !== ENTRY) return CLI_NAME;
  for (const dir of (pathEnv ?? '').split(path.delimiter)) {
    if (dir !== '' && realpath(path.join(dir, CLI_NAME)) === real) return CLI_NAME;
  }
  // Short only where it reads as the README's own `node bin/rollout-queue.js` (run from the
  // clone's root); anywhere else the absolute path, which pastes from any directory.
  const relative = path.relative(cwd, real);
  return `node ${shellWord(relative === path.join('bin', ENTRY) ? relative : real)}`;
}

let found: string | undefined;

/** {@link cliCommandFor} this process (`process.argv[1]`, `PATH`, the working directory, its environment), found once. */
export function cliCommand(): string {
  found ??= cliCommandFor({ script: process.argv[1], pathEnv: process.env.PATH, cwd: process.cwd(), env: process.env });
  return found;
}
