import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { findCgroupRoots, type CgroupRoots } from './cgroup.js';
import { builtNativeLauncher, LAUNCHER_CHOICES, type LauncherChoice } from './native-launcher.js';
import { findOnPath } from './program-check.js';

/**
 * Containment levels, strongest first:
 * - `namespace+cgroup`: a PID namespace per attempt (killing its init kills everything in
 *   it, setsid or not, and it dies with the worker) and a cgroup per attempt (memory limit
 *   over the artifact's whole tree, pids limit, peak memory, OOM kills counted);
 * - `namespace`: the PID namespace, memory bounded by `RLIMIT_DATA` per process;
 * - `cgroup`: the cgroup (kill by membership, memory limit, peak), no namespace;
 * - `process-group`: a process group, `RLIMIT_DATA` per process, death with the parent for
 *   the leader only, and a walk of the attempt's own subtree. A process that leaves the
 *   group (setsid) and is re-parented away (double fork) escapes it.
 */
export type ContainmentLevel = 'namespace+cgroup' | 'namespace' | 'cgroup' | 'process-group';

/**
 * What the worker asks for: `auto` (the strongest the host allows), `strict` (refuse to
 * start without a PID namespace and a cgroup memory limit), `process-group` (force the
 * fallback, e.g. to test it or where the detection misjudges a host).
 */
export type ContainmentMode = 'auto' | 'strict' | 'process-group';

/** Modes accepted by {@link detectContainment} (and env `ROLLOUT_QUEUE_CONTAINMENT`). */
export const CONTAINMENT_MODES: readonly ContainmentMode[] = ['auto', 'strict', 'process-group'];

/** The containment chosen for this process, and the tools it uses. JSON data (sent to rollout children). */
export interface Containment {
  readonly level: ContainmentLevel;
  /**
   * Absolute path of `rq-launch` when attempts start through it (one program that sets the
   * death signal, makes the PID namespace and its init, joins the cgroups and sets
   * `RLIMIT_DATA`), or null: the util-linux chain (`setpriv`, `unshare`, a `/bin/sh` init,
   * `prlimit`), the same containment at three program starts more per attempt.
   */
  readonly launcher: string | null;
  /**
   * At a namespace level with `launcher`: attempts start through one `rq-launch --serve` per
   * process (src/sandbox/launch-server.ts), not one launcher program each.
   */
  readonly serve: boolean;
  /**
   * Argv (its absolute path first) that makes a PID namespace and runs what follows `--` in it:
   * `rq-launch --pid` or `unshare --pid --fork --kill-child` (each with a user namespace,
   * `--user`, when unprivileged), or null.
   */
  readonly pidNamespace: readonly string[] | null;
  /** Where attempt cgroups go, or null. */
  readonly cgroup: CgroupRoots | null;
  /** Absolute path of a working `setpriv --pdeathsig` (a launcher dies with its parent), or null. */
  readonly setpriv: string | null;
  /** Absolute path of a working `prlimit` (`RLIMIT_DATA` bounds memory per process where there is no cgroup), or null. */
  readonly prlimit: string | null;
  /** What this level does not cover, one sentence each (logged at start, stated in README). */
  readonly gaps: readonly string[];
}

/** Raised by `strict` on a host without a PID namespace or a cgroup memory limit. */
export class ContainmentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContainmentError';
  }
}

function runs(argv: readonly string[]): boolean {
  const [program, ...args] = argv as [string, ...string[]];
  const result = spawnSync(program, args, { stdio: 'ignore', timeout: 5_000 });
  return result.status === 0;
}

/**
 * The absolute path of launcher tool `name` on this process' PATH (`execvp`'s default without
 * one) when `probe` (its arguments) runs with it, else null. Launchers name it by path: every
 * attempt then execs it directly, without trying each PATH directory first.
 */
function workingTool(name: string, probe: readonly string[]): string | null {
  const file = findOnPath(name, process.env.PATH ?? '/bin:/usr/bin');
  return file !== undefined && runs([file, ...probe]) ? file : null;
}

/**
 * The argv that makes a PID namespace here, or null (no CAP_SYS_ADMIN and user namespaces off,
 * or no launcher): through `launcher` when given, else util-linux `unshare`.
 */
function findPidNamespace(launcher: string | null): readonly string[] | null {
  if (launcher) {
    for (const flags of [['--pid'], ['--pid', '--user']]) {
      if (runs([launcher, ...flags, '--', 'true'])) return [launcher, ...flags];
    }
    return null;
  }
  for (const flags of [
    ['--pid', '--fork', '--kill-child'],
    ['--user', '--map-root-user', '--pid', '--fork', '--kill-child'],
  ]) {
    const unshare = workingTool('unshare', [...flags, 'true']);
    if (unshare) return [unshare, ...flags];
  }
  return null;
}

function levelOf(pidNamespace: unknown, cgroup: unknown): ContainmentLevel {
  if (pidNamespace && cgroup) return 'namespace+cgroup';
  if (pidNamespace) return 'namespace';
  if (cgroup) return 'cgroup';
  return 'process-group';
}

function gapsOf(level: ContainmentLevel, pdeathsig: boolean, prlimit: boolean): string[] {
  const gaps: string[] = [];
  if (level === 'cgroup' || level === 'process-group') {
    gaps.push('no PID namespace: the attempt is killed by its cgroup or process group, not as one namespace');
  }
  if (level === 'process-group') {
    gaps.push('a process that leaves the group (setsid) and is re-parented away (double fork) after the artifact exits survives the attempt');
    gaps.push(pdeathsig ? 'on a SIGKILLed worker only the artifact leader dies with it (PR_SET_PDEATHSIG); the rest of its group survives' : 'no setpriv: on a SIGKILLed worker the artifact keeps running');
  }
  if (level === 'namespace' || level === 'process-group') {
    gaps.push(prlimit ? 'memory is bounded per process (RLIMIT_DATA = sandbox.memoryMb), not over the whole tree; no peak memory' : 'no prlimit and no cgroup: the artifact\'s memory is not bounded');
  }
  return gaps;
}

/** `rq-launch` when it was built and starts a program here (a probe of a few ms), else null. */
function workingNativeLauncher(): string | null {
  const file = builtNativeLauncher();
  return file !== undefined && runs([file, '--', 'true']) ? file : null;
}

/**
 * Picks the containment for `mode` by trying each mechanism once (a few ms: one namespace
 * launch of `true`, one probe cgroup).
 * @param options.launcher how attempts start (see `LauncherChoice`). Default: env
 *   `ROLLOUT_QUEUE_LAUNCHER`, else `auto`.
 * @throws ContainmentError for `strict` on a host without a PID namespace and a cgroup, naming what is missing and the fix.
 * @throws Error for a mode outside {@link CONTAINMENT_MODES} or a launcher outside `LAUNCHER_CHOICES`.
 */
export function detectContainment(mode: ContainmentMode = 'auto', options: { launcher?: LauncherChoice } = {}): Containment {
  if (!CONTAINMENT_MODES.includes(mode)) throw new Error(`containment mode "${String(mode)}" is not one of ${CONTAINMENT_MODES.join(', ')}`);
  const choice = options.launcher ?? ((process.env.ROLLOUT_QUEUE_LAUNCHER as LauncherChoice | undefined) || 'auto');
  if (!LAUNCHER_CHOICES.includes(choice)) throw new Error(`launcher "${String(choice)}" is not one of ${LAUNCHER_CHOICES.join(', ')}`);
  const launcher = choice === 'util-linux' ? null : workingNativeLauncher();
  const setpriv = workingTool('setpriv', ['--pdeathsig', 'KILL', 'true']);
  const prlimit = workingTool('prlimit', ['--data=unlimited', 'true']);
  // Without rq-launch the namespace init and the cgroup join are /bin/sh scripts (sandbox.ts): no shell, no such level.
  const forced = mode === 'process-group' || (!launcher && !existsSync('/bin/sh'));
  const pidNamespace = forced ? null : findPidNamespace(launcher);
  const cgroup = forced ? null : (findCgroupRoots() ?? null);
  if (mode === 'strict' && (!pidNamespace || !cgroup)) {
    const missing = [
      ...(pidNamespace ? [] : ['a PID namespace (`unshare --pid --fork` failed: run as root, or allow user namespaces, or give the container CAP_SYS_ADMIN)']),
      ...(cgroup ? [] : ['a writable cgroup with memory and pids controllers (mount /sys/fs/cgroup read-write or delegate a cgroup v2 subtree)']),
    ];
    throw new ContainmentError(`containment strict: this host lacks ${missing.join(' and ')}; fix the host or start the worker with --containment auto`);
  }
  const level = levelOf(pidNamespace, cgroup);
  const gaps = gapsOf(level, setpriv !== null || launcher !== null, prlimit !== null || launcher !== null);
  const serve = choice === 'auto' && launcher !== null && pidNamespace !== null;
  return Object.freeze({ level, launcher, serve, pidNamespace, cgroup, setpriv, prlimit, gaps: Object.freeze(gaps) });
}

/** How `containment` starts attempts, for logs and `status`: `rq-launch --serve`, `rq-launch` or `util-linux`. */
export function launcherName(containment: Containment): string {
  if (!containment.launcher) return 'util-linux';
  return containment.serve ? 'rq-launch --serve' : 'rq-launch';
}

let current: Containment | undefined;

/**
 * Sets the containment every sandbox of this process uses (a rollout child gets the
 * worker's choice this way, so both agree and the child does not probe again).
 */
export function useContainment(containment: Containment): void {
  current = containment;
}

/**
 * The containment of this process: the one set by {@link useContainment}, else detected
 * once with the mode in env `ROLLOUT_QUEUE_CONTAINMENT` (default `auto`).
 */
export function currentContainment(): Containment {
  current ??= detectContainment((process.env.ROLLOUT_QUEUE_CONTAINMENT as ContainmentMode | undefined) || 'auto');
  return current;
}
