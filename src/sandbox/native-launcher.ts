import { accessSync, constants } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Where the build puts `rq-launch` (`native/rq-launch.c`, compiled by
 * `scripts/build-launcher.mjs` at `npm ci`/`npm install` when a C compiler is there): the
 * package's `native/` folder, two levels above this module both in `src/sandbox` and `dist/sandbox`.
 */
export const NATIVE_LAUNCHER_PATH = fileURLToPath(new URL('../../native/rq-launch', import.meta.url));

/**
 * Which program starts an attempt: `auto` (`rq-launch` when it was built and works here, else the
 * util-linux chain), `util-linux` (always `setpriv`, `unshare`, a `/bin/sh` init, `prlimit`: the
 * same containment, three program starts more per attempt).
 */
export type LauncherChoice = 'auto' | 'util-linux';

/** Choices accepted by `detectContainment` (and env `ROLLOUT_QUEUE_LAUNCHER`). */
export const LAUNCHER_CHOICES: readonly LauncherChoice[] = ['auto', 'util-linux'];

/** The built `rq-launch` when it is there and executable, else undefined (no C compiler at install). */
export function builtNativeLauncher(file: string = NATIVE_LAUNCHER_PATH): string | undefined {
  try {
    accessSync(file, constants.X_OK);
    return file;
  } catch {
    return undefined;
  }
}
