import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { findCgroupRoots, type CgroupRoots } from './cgroup.js';
import { GAP_FIXES, type Boundary, type ContainmentGap } from './containment-gaps.js';
import { builtNativeLauncher, LAUNCHER_CHOICES, type LauncherChoice } from './native-launcher.js';
import { findOnPath } from './program-check.js';
import { detectTenantView, type TenantView } from './tenant-view.js';

/**
 * Containment levels, strongest first:
 * - `sealed`: every boundary of `containment-gaps.ts` closed (no gaps): the tenant view
 *   (bubblewrap: only its own loopback, a private /proc, the system read-only, one size-capped
 *   tmpfs for its work dir, /tmp and /dev/shm, an unprivileged uid) inside a PID namespace and a
 *   cgroup with memory, pids and CPU limits;
 * - `namespace+cgroup`: a PID namespace per attempt (killing its init kills everything in
 *   it, setsid or not, and it dies with the worker) and a cgroup per attempt (memory limit
 *   over the artifact's whole tree, pids limit, peak memory, OOM kills counted), with the
 *   gaps listed (at least one: without them the level is `sealed`);
 * - `namespace`: the PID namespace, memory bounded by `RLIMIT_DATA` per process;
 * - `cgroup`: the cgroup (kill by membership, memory limit, peak), no namespace;
 * - `process-group`: a process group, `RLIMIT_DATA` per process, death with the parent for
 *   the leader only, and a walk of the attempt's own subtree. A process that leaves the
 *   group (setsid) and is re-parented away (double fork) escapes it.
 */
export type ContainmentLevel = 'sealed' | 'namespace+cgroup' | 'namespace' | 'cgroup' | 'process-group';

/**
 * What the worker asks for, by every level name of {@link ContainmentLevel} (docs/security.md
 * names them) besides `auto` and `strict`:
 * - `auto`: the strongest level the host allows, gaps listed;
 * - `sealed` (or its older name `strict`): require the top level, refuse to start with any gap;
 * - a weaker level (`namespace+cgroup`, `namespace`, `cgroup`, `process-group`), forced on
 *   purpose, e.g. by a test or for programs that are trusted and need the host: no tenant view
 *   (the attempt shares the worker's network, /proc, file system and uid) and none of the
 *   mechanisms above that level; lower where the host lacks one of its own, gaps listed.
 * A weaker name is a ceiling, not a floor: a worker that must not run below a level asks for
 * `sealed` (fresh-user report: `--containment sealed` was refused although the docs call the
 * top level `sealed`).
 */
export type ContainmentMode = 'auto' | 'strict' | ContainmentLevel;

/** Modes accepted by {@link detectContainment} (and env `ROLLOUT_QUEUE_CONTAINMENT`, and `worker --containment`). */
export const CONTAINMENT_MODES: readonly ContainmentMode[] = ['auto', 'strict', 'sealed', 'namespace+cgroup', 'namespace', 'cgroup', 'process-group'];

/** Modes that refuse to start on a host with any gap: they require the `sealed` level. */
const REQUIRES_SEALED: ReadonlySet<ContainmentMode> = new Set(['strict', 'sealed']);

/** Weaker levels forced on purpose: no tenant view, and at most the mechanisms of the level. */
const FORCED_LEVELS: ReadonlySet<ContainmentMode> = new Set(['namespace+cgroup', 'namespace', 'cgroup', 'process-group']);

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
  /** How a program the plane spawns for a spec sees the machine, or null (no tenant view: the gaps say what is open). */
  readonly tenant: TenantView | null;
  /** Whether a spec may ask for the host network (`sandbox.network: "host"`): the worker's `allowNetwork`. */
  readonly allowNetwork: boolean;
  /** Every boundary this host does not close, with one sentence each (start line, `status`, `/metrics`, Results). */
  readonly gaps: readonly ContainmentGap[];
}

/** Raised by `sealed` (or `strict`) on a host with any containment gap. */
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

/** What makes the gaps of a host: the mechanisms found, and why the tenant view is missing (null: it is there). */
interface Mechanisms {
  readonly pidNamespace: boolean;
  readonly cgroup: CgroupRoots | null;
  readonly pdeathsig: boolean;
  readonly prlimit: boolean;
  readonly tenant: TenantView | null;
  readonly tenantMissing: string | null;
}

function gapsOf(found: Mechanisms): ContainmentGap[] {
  const gaps: ContainmentGap[] = [];
  const gap = (boundary: Boundary, reason: string): number => gaps.push({ boundary, reason });
  if (!found.tenant) {
    const why = found.tenantMissing ?? 'no tenant view';
    gap('network', `${why}: the program shares the worker's network (it can reach Redis, the gateway and any host the worker can)`);
    gap('proc', `${why}: the program sees the host's /proc (other processes' environment, command line and memory)`);
    gap('filesystem', `${why}: the program sees the host's files with the worker's permissions (the worker's directory, home, temp dir, other attempts' dirs)`);
    gap('identity', `${why}: the program runs as the worker's uid${process.getuid?.() === 0 ? ' (root)' : ''}`);
    gap('disk', `${why}: the program writes wherever the worker can, uncapped, and what it leaves in /dev/shm outlives it`);
  } else if (!found.tenant.identity) {
    gap('identity', `an unprivileged worker: the program sees uid ${found.tenant.programUid} but its kernel uid is the worker's (${process.getuid?.() ?? '?'}), so what the worker owns and the tenant view shows (its work dir) is its own`);
  }
  if (!found.pidNamespace) {
    gap(
      'pid',
      found.cgroup
        ? 'no PID namespace: the attempt is killed by its cgroup, not as one namespace'
        : `no PID namespace: a process that leaves the group (setsid) and is re-parented away (double fork) survives the attempt; ${found.pdeathsig ? 'on a SIGKILLed worker only the artifact leader dies with it (PR_SET_PDEATHSIG)' : 'no setpriv: on a SIGKILLed worker the artifact keeps running'}`,
    );
  }
  if (!found.cgroup) {
    gap('memory', found.prlimit ? 'no cgroup: memory is bounded per process (RLIMIT_DATA = sandbox.memoryMb), not over the whole tree; no peak memory' : "no prlimit and no cgroup: the artifact's memory is not bounded");
    gap('processes', 'no cgroup: the number of processes is not capped (a fork bomb reaches the host\'s limits)');
  }
  if (!found.cgroup?.cpu) gap('cpu', found.cgroup ? 'the cgroup has no cpu controller: sandbox.cpus is not enforced' : 'no cgroup: sandbox.cpus is not enforced');
  return gaps;
}

/** `rq-launch` when it was built and starts a program here (a probe of a few ms), else null. */
function workingNativeLauncher(): string | null {
  const file = builtNativeLauncher();
  return file !== undefined && runs([file, '--', 'true']) ? file : null;
}

/** Options of {@link detectContainment}. */
export interface ContainmentOptions {
  /** How attempts start (see `LauncherChoice`). Default: env `ROLLOUT_QUEUE_LAUNCHER`, else `auto`. */
  readonly launcher?: LauncherChoice;
  /** Let a spec ask for the host network (`sandbox.network: "host"`). Default false: such a spec ends `caller`. */
  readonly allowNetwork?: boolean;
  /** Absolute host paths (existing) a tenant program sees read-only, besides the system and the interpreters. Default none. */
  readonly exposeReadOnly?: readonly string[];
}

/**
 * Picks the containment for `mode` by trying each mechanism once (a few ms each: one namespace
 * launch of `true`, one probe cgroup, one tenant-view start of `true`; plus one python3 start,
 * ~0.1 s, to find where its installation lives).
 * @throws ContainmentError for `sealed`/`strict` on a host with any gap, naming each gap and its fix.
 * @throws Error for a mode outside {@link CONTAINMENT_MODES} or a launcher outside `LAUNCHER_CHOICES`.
 */
export function detectContainment(mode: ContainmentMode = 'auto', options: ContainmentOptions = {}): Containment {
  if (!CONTAINMENT_MODES.includes(mode)) throw new Error(`containment mode "${String(mode)}" is not one of ${CONTAINMENT_MODES.join(', ')}`);
  const choice = options.launcher ?? ((process.env.ROLLOUT_QUEUE_LAUNCHER as LauncherChoice | undefined) || 'auto');
  if (!LAUNCHER_CHOICES.includes(choice)) throw new Error(`launcher "${String(choice)}" is not one of ${LAUNCHER_CHOICES.join(', ')}`);
  const launcher = choice === 'util-linux' ? null : workingNativeLauncher();
  const setpriv = workingTool('setpriv', ['--pdeathsig', 'KILL', 'true']);
  const prlimit = workingTool('prlimit', ['--data=unlimited', 'true']);
  // Without rq-launch the namespace init and the cgroup join are /bin/sh scripts (sandbox.ts): no shell, no such level.
  const forced = mode === 'process-group' || (!launcher && !existsSync('/bin/sh'));
  const pidNamespace = forced || mode === 'cgroup' ? null : findPidNamespace(launcher);
  const cgroup = forced || mode === 'namespace' ? null : (findCgroupRoots() ?? null);
  const serve = choice === 'auto' && launcher !== null && pidNamespace !== null;
  let tenant: TenantView | null = null;
  let tenantMissing: string | null = FORCED_LEVELS.has(mode) ? `containment ${mode} was asked for` : null;
  if (!tenantMissing) {
    const found = detectTenantView({ launcher, serve, userNamespace: pidNamespace?.includes('--user') ?? false, exposeReadOnly: options.exposeReadOnly ?? [] });
    if ('view' in found) tenant = found.view;
    else tenantMissing = found.missing;
  }
  const gaps = gapsOf({ pidNamespace: pidNamespace !== null, cgroup, pdeathsig: setpriv !== null || launcher !== null, prlimit: prlimit !== null || launcher !== null, tenant, tenantMissing });
  if (REQUIRES_SEALED.has(mode) && gaps.length > 0) {
    const each = gaps.map((gap) => `${gap.boundary} (${gap.reason}; fix: ${GAP_FIXES[gap.boundary]})`);
    throw new ContainmentError(`containment ${mode}: this host leaves ${gaps.length} boundar${gaps.length === 1 ? 'y' : 'ies'} open: ${each.join('; ')}. Fix the host, or start the worker with --containment auto to run with these gaps listed`);
  }
  const level = gaps.length === 0 ? 'sealed' : levelOf(pidNamespace, cgroup);
  return Object.freeze({
    level,
    launcher,
    serve,
    pidNamespace,
    cgroup,
    setpriv,
    prlimit,
    tenant,
    allowNetwork: options.allowNetwork ?? false,
    gaps: Object.freeze(gaps.map((gap) => Object.freeze(gap))),
  });
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
