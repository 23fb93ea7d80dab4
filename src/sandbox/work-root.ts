import os from 'node:os';
import path from 'node:path';

/** Directory under `os.tmpdir()` that holds every attempt's work directory. */
export const WORK_ROOT_NAME = 'rollout-queue';

/** `<os.tmpdir()>/rollout-queue`, shared by every worker and test run on the machine. */
export function workRoot(): string {
  return path.join(os.tmpdir(), WORK_ROOT_NAME);
}
