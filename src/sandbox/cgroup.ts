import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Directory under each cgroup hierarchy that holds every attempt's cgroup. */
export const CGROUP_PARENT = 'rollout-queue';

/** Most tasks (processes and threads) one attempt may hold at once (`pids.max`). */
export const DEFAULT_PIDS_MAX = 1024;

/** CFS period of an attempt's CPU quota, µs (the kernel's default, 100 ms): the quota is `cpus` × this per period. */
const CPU_PERIOD_US = 100_000;

/**
 * Where attempt cgroups are made: cgroup v2 (one unified tree, `memory.max`, `pids.max`,
 * `cpu.max`, `cgroup.kill`, `memory.peak`, `memory.events`) or v1 (separate `memory`, `pids`
 * and `cpu` hierarchies, `memory.limit_in_bytes`, `memory.max_usage_in_bytes`,
 * `memory.oom_control`, `cpu.cfs_quota_us`). v2 roots are `<mount><this process'
 * cgroup>/rollout-queue` (where a delegated subtree is writable), v1 roots `<mount>/rollout-queue`.
 * `cpu` says whether attempts get a CPU quota (v2: the cpu controller is enabled there; v1:
 * the directory of the cpu hierarchy, or null without one).
 */
export type CgroupRoots =
  | { readonly version: 2; readonly root: string; readonly cpu: boolean }
  | { readonly version: 1; readonly memory: string; readonly pids: string; readonly cpu: string | null };

/** What an attempt's cgroup recorded, read after it ran. */
export interface CgroupUsage {
  /** Peak memory charged to the attempt (RSS plus page cache), bytes; null when the kernel does not keep it. */
  readonly peakBytes: number | null;
  /** Processes of the attempt the kernel's OOM killer killed. */
  readonly oomKills: number;
  /** CFS periods in which the attempt used its whole CPU quota and was held back (`cpu.stat` nr_throttled); null without a quota. */
  readonly cpuThrottledPeriods: number | null;
}

interface Mount {
  readonly dir: string;
  readonly type: string;
  readonly options: readonly string[];
}

function mounts(): Mount[] {
  try {
    return readFileSync('/proc/self/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' '))
      .filter((f) => f.length >= 4 && (f[2] === 'cgroup' || f[2] === 'cgroup2'))
      .map((f) => ({ dir: (f[1] as string).replace(/\\040/g, ' '), type: f[2] as string, options: (f[3] as string).split(',') }));
  } catch {
    return [];
  }
}

/** This process' cgroup path per v1 controller (and `''` for v2), from /proc/self/cgroup. */
function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, where] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
      if (controllers === undefined || where === undefined) continue;
      for (const controller of controllers.split(',')) own.set(controller, where);
    }
  } catch {
    // No /proc: no cgroups.
  }
  return own;
}

function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

/** Makes a probe cgroup under `root` and checks `files` appear in it; removes it again. */
function probe(root: string, files: readonly string[]): boolean {
  const dir = path.join(root, `probe-${process.pid}-${Date.now()}`);
  try {
    mkdirSync(dir);
  } catch {
    return false;
  }
  try {
    return files.every((file) => existsSync(path.join(dir, file)));
  } finally {
    try {
      rmdirSync(dir);
    } catch {
      // A probe holds no process; nothing keeps it.
    }
  }
}

/**
 * The cgroup roots this process may create attempt cgroups under, or undefined when no
 * writable hierarchy has both memory and pids control (unprivileged container, no cgroupfs).
 * v2 is preferred; on v2 the controllers must be enabled for children of our own cgroup,
 * which the kernel refuses while that cgroup holds processes (no-internal-process rule).
 */
export function findCgroupRoots(): CgroupRoots | undefined {
  const all = mounts();
  const own = ownCgroups();
  const unified = all.find((m) => m.type === 'cgroup2');
  if (unified) {
    const ownPath = path.join(unified.dir, own.get('') ?? '/');
    const base = existsSync(ownPath) ? ownPath : unified.dir;
    const root = path.join(base, CGROUP_PARENT);
    try {
      const controllers = readFileSync(path.join(base, 'cgroup.controllers'), 'utf8').split(/\s+/);
      if (controllers.includes('memory') && controllers.includes('pids')) {
        mkdirSync(root, { recursive: true });
        tryWrite(path.join(base, 'cgroup.subtree_control'), '+memory +pids');
        tryWrite(path.join(root, 'cgroup.subtree_control'), '+memory +pids');
        if (controllers.includes('cpu')) {
          tryWrite(path.join(base, 'cgroup.subtree_control'), '+cpu');
          tryWrite(path.join(root, 'cgroup.subtree_control'), '+cpu');
        }
        if (probe(root, ['memory.max', 'pids.max'])) return { version: 2, root, cpu: probe(root, ['cpu.max']) };
      }
    } catch {
      // Not writable or no controllers: try v1.
    }
  }
  const memoryMount = all.find((m) => m.type === 'cgroup' && m.options.includes('memory'));
  const pidsMount = all.find((m) => m.type === 'cgroup' && m.options.includes('pids'));
  const cpuMount = all.find((m) => m.type === 'cgroup' && m.options.includes('cpu'));
  if (!memoryMount || !pidsMount) return undefined;
  // v1: at the hierarchy's mount root. /proc/self/cgroup paths are not always below the mount
  // (a container without a cgroup namespace sees its host path but has its own cgroup mounted).
  const memory = path.join(memoryMount.dir, CGROUP_PARENT);
  const pids = path.join(pidsMount.dir, CGROUP_PARENT);
  try {
    mkdirSync(memory, { recursive: true });
    mkdirSync(pids, { recursive: true });
  } catch {
    return undefined;
  }
  if (!probe(memory, ['memory.limit_in_bytes']) || !probe(pids, ['pids.max'])) return undefined;
  let cpu: string | null = null;
  if (cpuMount && cpuMount.dir !== memoryMount.dir && cpuMount.dir !== pidsMount.dir) {
    try {
      cpu = path.join(cpuMount.dir, CGROUP_PARENT);
      mkdirSync(cpu, { recursive: true });
      if (!probe(cpu, ['cpu.cfs_quota_us'])) cpu = null;
    } catch {
      cpu = null;
    }
  }
  return { version: 1, memory, pids, cpu };
}

/** An attempt cgroup's directories under `roots`: v2 one; v1 memory, pids and (with a cpu hierarchy) cpu. */
function dirsOf(roots: CgroupRoots, name: string): string[] {
  if (roots.version === 2) return [path.join(roots.root, name)];
  return [path.join(roots.memory, name), path.join(roots.pids, name), ...(roots.cpu ? [path.join(roots.cpu, name)] : [])];
}

/**
 * One attempt's cgroup (a directory per hierarchy), named like its work directory.
 * Created with its limits; processes join it through `procsFiles` before they exec the
 * artifact, so everything the artifact forks is inside from its first instruction.
 */
export class AttemptCgroup {
  private constructor(
    readonly dirs: readonly string[],
    private readonly roots: CgroupRoots,
  ) {}

  /**
   * Makes the cgroup `name` with a memory limit of `memoryMb` MiB (swap included where the
   * kernel accounts it), `pidsMax` tasks and, where `roots.cpu`, a CPU quota of `cpus` CPUs
   * (`cpus` × 100 ms of CPU time per 100 ms period, over every thread of the attempt).
   * @throws Error when a directory cannot be made or a limit cannot be written.
   */
  static create(roots: CgroupRoots, name: string, memoryMb: number | undefined, pidsMax: number, cpus?: number): AttemptCgroup {
    const dirs = dirsOf(roots, name);
    const group = new AttemptCgroup(dirs, roots);
    const quota = cpus === undefined ? undefined : String(Math.max(1_000, Math.round(cpus * CPU_PERIOD_US)));
    try {
      for (const dir of dirs) mkdirSync(dir);
      const bytes = memoryMb === undefined ? undefined : String(memoryMb * 1024 * 1024);
      if (roots.version === 2) {
        const [dir] = dirs as [string];
        if (bytes) writeFileSync(path.join(dir, 'memory.max'), bytes);
        if (bytes) tryWrite(path.join(dir, 'memory.swap.max'), '0');
        writeFileSync(path.join(dir, 'pids.max'), String(pidsMax));
        if (quota && roots.cpu) writeFileSync(path.join(dir, 'cpu.max'), `${quota} ${CPU_PERIOD_US}`);
      } else {
        const [memory, pids, cpu] = dirs as [string, string, string | undefined];
        if (bytes) writeFileSync(path.join(memory, 'memory.limit_in_bytes'), bytes);
        // memsw must not be below the limit; where swap is not accounted the file is absent.
        if (bytes) tryWrite(path.join(memory, 'memory.memsw.limit_in_bytes'), bytes);
        writeFileSync(path.join(pids, 'pids.max'), String(pidsMax));
        // A new cgroup inherits the kernel's default period (100 ms); only the quota is written.
        if (quota && cpu) writeFileSync(path.join(cpu, 'cpu.cfs_quota_us'), quota);
      }
    } catch (err) {
      group.remove();
      throw err;
    }
    return group;
  }

  /** The `cgroup.procs` files a process writes its pid to, to join. */
  get procsFiles(): string[] {
    return this.dirs.map((dir) => path.join(dir, 'cgroup.procs'));
  }

  /** Pids in the cgroup now. */
  members(): number[] {
    const pids = new Set<number>();
    for (const file of this.procsFiles) {
      try {
        for (const line of readFileSync(file, 'utf8').split('\n')) if (line) pids.add(Number(line));
      } catch {
        // Removed already.
      }
    }
    return [...pids];
  }

  /** SIGKILLs every member (v2: `cgroup.kill`, atomic against forks). Returns how many were left. */
  killAll(): number {
    const [first] = this.dirs;
    if (this.roots.version === 2 && first) tryWrite(path.join(first, 'cgroup.kill'), '1');
    const left = this.members();
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
    return left.length;
  }

  /** Peak memory, OOM kills and CPU throttling so far. */
  usage(): CgroupUsage {
    const [memoryDir] = this.dirs as [string];
    const read = (dir: string | undefined, file: string): string | undefined => {
      if (dir === undefined) return undefined;
      try {
        return readFileSync(path.join(dir, file), 'utf8');
      } catch {
        return undefined;
      }
    };
    const peak = read(memoryDir, this.roots.version === 2 ? 'memory.peak' : 'memory.max_usage_in_bytes');
    const events = read(memoryDir, this.roots.version === 2 ? 'memory.events' : 'memory.oom_control') ?? '';
    const oomKills = Number(/^oom_kill (\d+)/m.exec(events)?.[1] ?? 0);
    const cpuDir = this.roots.version === 2 ? (this.roots.cpu ? memoryDir : undefined) : this.dirs[2];
    const throttled = /^nr_throttled (\d+)/m.exec(read(cpuDir, 'cpu.stat') ?? '')?.[1];
    return { peakBytes: peak === undefined ? null : Number(peak.trim()), oomKills, cpuThrottledPeriods: throttled === undefined ? null : Number(throttled) };
  }

  /** Removes the cgroup directories; false while a member is still exiting (EBUSY). */
  remove(): boolean {
    let done = true;
    for (const dir of this.dirs) {
      try {
        rmdirSync(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') done = false;
      }
    }
    return done;
  }

  /** The attempt cgroups (by directory name) under `roots`, for the sweep of dead attempts. */
  static list(roots: CgroupRoots): Map<string, AttemptCgroup> {
    const found = new Map<string, AttemptCgroup>();
    const bases = roots.version === 2 ? [roots.root] : [roots.memory, roots.pids, ...(roots.cpu ? [roots.cpu] : [])];
    for (const base of bases) {
      let names: string[];
      try {
        names = readdirSync(base, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
      } catch {
        continue;
      }
      for (const name of names) {
        if (found.has(name)) continue;
        found.set(name, new AttemptCgroup(dirsOf(roots, name), roots));
      }
    }
    return found;
  }
}
