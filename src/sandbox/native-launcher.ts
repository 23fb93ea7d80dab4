import { accessSync, constants } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Where the build puts `rq-launch` (`native/rq-launch.c`, compiled by
 * `scripts/build-launcher.mjs` at `npm ci`/`npm install` when a C compiler is there): the
 * package's `native/` folder, two levels above this module both in `src/sandbox` and `dist/sandbox`.
 */
export const NATIVE_LAUNCHER_PATH = fileURLToPath(new URL('../../native/rq-launch', import.meta.url));

/**
 * How an attempt is started, fastest first:
 * - `auto`: where `rq-launch` was built and works, at a namespace level by one launch server per
 *   process (`rq-launch --serve`, which clones itself into each attempt's namespace: no fork of
 *   the Node process and no program start per attempt), else by `rq-launch` per attempt; without
 *   `rq-launch`, as `util-linux`;
 * - `exec`: `rq-launch` started for each attempt (the Node process forks it);
 * - `util-linux`: `setpriv`, `unshare`, a `/bin/sh` init and `prlimit` for each attempt.
 * The containment is the same for all three.
 */
export type LauncherChoice = 'auto' | 'exec' | 'util-linux';

/** Choices accepted by `detectContainment` (and env `ROLLOUT_QUEUE_LAUNCHER`). */
export const LAUNCHER_CHOICES: readonly LauncherChoice[] = ['auto', 'exec', 'util-linux'];

/** The built `rq-launch` when it is there and executable, else undefined (no C compiler at install). */
export function builtNativeLauncher(): string | undefined {
  try {
    accessSync(NATIVE_LAUNCHER_PATH, constants.X_OK);
    return NATIVE_LAUNCHER_PATH;
  } catch {
    return undefined;
  }
}
