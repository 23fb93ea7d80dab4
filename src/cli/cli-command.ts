import { realpathSync } from 'node:fs';
import path from 'node:path';

/** The CLI's entry script (bin/rollout-queue.js): what `process.argv[1]` is when this CLI runs. */
const ENTRY = 'rollout-queue.js';

/** The name the package's `bin` gives the CLI on PATH (package.json). */
export const CLI_NAME = 'rollout-queue';

/** Where the command is looked for: the entry script as run, the PATH and the working directory. */
export interface Invocation {
  readonly script: string | undefined;
  readonly pathEnv: string | undefined;
  readonly cwd: string;
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
 * How a hint the user may paste (resume, cancel, status…) invokes the CLI that prints it:
 * `rollout-queue` when that name on PATH is this very entry script (`npm link`, an install, npx),
 * or when something other than the CLI runs (a test, a library); else `node bin/rollout-queue.js`
 * from the clone's root and `node <absolute path>` from anywhere else: from a fresh clone, where
 * nothing puts `rollout-queue` on PATH, the hint works as pasted.
 */
export function cliCommandFor({ script, pathEnv, cwd }: Invocation): string {
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

/** {@link cliCommandFor} this process (`process.argv[1]`, `PATH`, the working directory), found once. */
export function cliCommand(): string {
  found ??= cliCommandFor({ script: process.argv[1], pathEnv: process.env.PATH, cwd: process.cwd() });
  return found;
}
