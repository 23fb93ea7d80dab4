import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { AttemptCgroup } from './cgroup.js';
import { currentContainment, type Containment } from './containment.js';
import { isAlive, parseIdentity } from './process-identity.js';
import { workRoot } from './work-root.js';

/** What {@link sweepDeadSandboxes} removed. */
export interface SweepReport {
  /** Work directories removed. */
  readonly dirs: number;
  /** Attempt cgroups emptied and removed. */
  readonly cgroups: number;
}

/**
 * Removes the work directories and cgroups of attempts whose creator process is dead
 * (left by a SIGKILLed worker or a killed rollout child). Several workers and test runs share
 * `<os.tmpdir()>/rollout-queue`: a name without a creator marker, or whose creator is alive or
 * cannot be judged (another pid namespace), is never touched.
 * @param options.creatorPid only sandboxes this (dead) process created, e.g. a rollout child that just exited.
 */
export async function sweepDeadSandboxes(options: { creatorPid?: number; containment?: Containment } = {}): Promise<SweepReport> {
  const containment = options.containment ?? currentContainment();
  const dead = (name: string): boolean => {
    const creator = parseIdentity(name);
    if (!creator || (options.creatorPid !== undefined && creator.pid !== options.creatorPid)) return false;
    return !isAlive(creator);
  };
  let cgroups = 0;
  if (containment.cgroup) {
    for (const [name, group] of AttemptCgroup.list(containment.cgroup)) {
      if (!dead(name)) continue;
      for (let i = 0; i < 50; i++) {
        group.killAll();
        if (group.remove()) {
          cgroups++;
          break;
        }
        await delay(20);
      }
    }
  }
  let dirs = 0;
  let names: string[] = [];
  try {
    names = await readdir(workRoot());
  } catch {
    // No work root yet.
  }
  for (const name of names) {
    if (!dead(name)) continue;
    try {
      await rm(path.join(workRoot(), name), { recursive: true, force: true, maxRetries: 3 });
      dirs++;
    } catch {
      // Still being written by a dying process: the next sweep gets it.
    }
  }
  return { dirs, cgroups };
}
