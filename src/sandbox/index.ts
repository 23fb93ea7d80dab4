/**
 * Per-attempt containment (DESIGN.md "Containment"): the unit created, limited, killed and
 * removed as a whole for each rollout attempt. Imports only node built-ins; runners and the
 * consumer build on it.
 */
export { CGROUP_PARENT, DEFAULT_PIDS_MAX, type CgroupRoots } from './cgroup.js';
export { BOUNDARIES, gapNames, gapsText, GAP_FIXES, type Boundary, type ContainmentGap } from './containment-gaps.js';
export { TENANT_TMP_DIR, TENANT_UID, TENANT_WORK_DIR, type TenantView } from './tenant-view.js';
export { LAUNCHER_CHOICES, NATIVE_LAUNCHER_PATH, type LauncherChoice } from './native-launcher.js';
export {
  CONTAINMENT_MODES,
  ContainmentError,
  currentContainment,
  detectContainment,
  launcherName,
  useContainment,
  type Containment,
  type ContainmentLevel,
  type ContainmentMode,
  type ContainmentOptions,
} from './containment.js';
export { destroyLiveSandboxes, destroyLiveSandboxesSync, liveSandboxCount, Sandbox, type AttemptProcess, type ProgramView, type SandboxRequest, type SandboxUsage } from './sandbox.js';
export { killPids, killSubtree, subtreeOf } from './subtree.js';
export { watchSpawns } from './spawn-watch.js';
export { sweepDeadSandboxes, type SweepReport } from './sweep.js';
export { workRoot, WORK_ROOT_NAME } from './work-root.js';
