import type { Logger } from '../platform/logger.js';
import { sweepDeadSandboxes, type Containment } from '../sandbox/index.js';

/**
 * Removes what attempts of dead creators left (work dirs, cgroups). A worker sweeps at its start
 * and at each liveness sample, not only at its start: a SIGKILLed worker on this machine leaves
 * its attempts' dirs, and the next start may be far off. Cheap: one listing of the work root;
 * concurrent sweeps by other workers are harmless (removal is forced, a dir already gone is
 * skipped). Logs the counts (with `quietWhenNone`, only when something was removed).
 * @throws the sweep's error (a dir still being written): the next sample retries.
 */
export async function sweepDeadAttempts(containment: Containment, logger: Logger, quietWhenNone: boolean): Promise<void> {
  const swept = await sweepDeadSandboxes({ containment });
  if (quietWhenNone && swept.dirs + swept.cgroups === 0) return;
  logger.info({ dirs: swept.dirs, cgroups: swept.cgroups }, `swept ${swept.dirs} work dir(s) and ${swept.cgroups} cgroup(s) left by dead attempts`);
}
