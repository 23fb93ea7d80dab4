import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { CallerError } from '../spec/errors.js';
import { DEFAULT_CPUS, DEFAULT_DISK_MB } from '../spec/sandbox-defaults.js';
import { AttemptCgroup, DEFAULT_PIDS_MAX } from './cgroup.js';
import { currentContainment, type Containment } from './containment.js';
import { LaunchServer, type ServedAttempt } from './launch-server.js';
import { identityMarker, ownIdentity } from './process-identity.js';
import { launcherArgv, usesLauncherLocale } from './launcher-argv.js';
import { checkProgram } from './program-check.js';
import { killPids, signalQuietly, stopSubtree } from './subtree.js';
import { TenantAttempt } from './tenant-attempt.js';
import { makeWorkDir, removeWorkDir } from './work-dirs.js';

/** What {@link Sandbox.create} makes. */
export interface SandboxRequest {
  /** Start of the directory and cgroup name (letters, digits, `._-`), e.g. `<leaseId>.<runAttemptId>.a<attempt>`. */
  readonly name: string;
  /** Memory limit over the attempt's whole process tree, MiB (cgroup), or per process (`RLIMIT_DATA`) without one; undefined = none. */
  readonly memoryMb?: number | undefined;
  /** Most tasks at once (cgroup `pids.max`). Default {@link DEFAULT_PIDS_MAX}. */
  readonly pidsMax?: number;
  /** CPU time in CPUs (cgroup quota, where the cgroup has the cpu controller). Default `DEFAULT_CPUS` (1). */
  readonly cpus?: number | undefined;
  /** Size of the tenant tmpfs (work dir, /tmp, /dev/shm together), MiB, with a tenant view. Default `DEFAULT_DISK_MB` (512). */
  readonly diskMb?: number | undefined;
  /** `host` shares the worker's network with the program (only where `containment.allowNetwork`). Default `none`. */
  readonly network?: 'none' | 'host' | undefined;
  /** Default: {@link currentContainment}. */
  readonly containment?: Containment;
}

/** What the program sees of its sandbox: paths inside its view (the host's own without a tenant view). */
export interface ProgramView {
  /** Its working directory (HOME too). */
  readonly workDir: string;
  /** Its temp dir (TMPDIR). */
  readonly tmpDir: string;
  /** Its PATH, or undefined: the worker's. */
  readonly path: string | undefined;
}

/**
 * The program an attempt runs, as {@link Sandbox.spawn} started it: a `ChildProcess` (a launcher
 * program) or a `ServedAttempt` (the launch server's). Both emit `'spawn'` once `pid` and the
 * stdio streams are set, `'error'` when it could not start (or, served, lost its server),
 * `'exit'` (code, signal) and `'close'` after the streams closed, as `ChildProcess` does.
 */
export interface AttemptProcess extends NodeJS.EventEmitter {
  readonly pid?: number | undefined;
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
}

/** What the attempt used, read after it ran. */
export interface SandboxUsage {
  /** Peak memory charged to the attempt's cgroup (RSS plus page cache), bytes; null without a cgroup. */
  readonly peakBytes: number | null;
  /** Processes of the attempt killed by the kernel's OOM killer (0 without a cgroup: it cannot tell). */
  readonly oomKills: number;
  /** CFS periods the attempt was held back at its CPU quota (`sandbox.cpus`); null without a quota. */
  readonly cpuThrottledPeriods: number | null;
  /** Bytes in use on the tenant tmpfs (work dir, /tmp, /dev/shm); null without one. */
  readonly diskUsedBytes: number | null;
  /** True when the tenant tmpfs had (next to) no room left: writes failed with ENOSPC. */
  readonly diskFull: boolean;
}

const live = new Set<Sandbox>();

/**
 * The containment unit of one rollout attempt: a private work directory, and where the host
 * allows a cgroup (memory, pids and CPU limits), a PID namespace per spawned program and the
 * tenant view (bubblewrap; its writable tmpfs in place of the work directory). Created,
 * limited, killed and removed as a whole; see `ContainmentLevel` for what each level holds.
 * Every live sandbox of the process is registered, so a supervisor can destroy what an
 * attempt left ({@link destroyLiveSandboxes}) whatever the runner did.
 *
 * Names carry the creator's identity (`…-p<pid>s<start>n<pidns>-XXXXXX`), so a worker sweeps
 * the leftovers of dead creators only (`sweepDeadSandboxes`).
 */
export class Sandbox {
  private launcher: AttemptProcess | undefined;
  private launcherExit: Promise<void> | undefined;
  /** The launcher's 'exit' was seen (set before any other listener of it runs). */
  private launcherGone = false;
  private destroying: Promise<void> | undefined;
  /** Process-group level: every pid seen below the launcher (see {@link signal}). */
  private readonly subtree = new Set<number>();

  private constructor(
    /** The attempt's private work directory (mode 0700), where this process writes the program's files. */
    readonly dir: string,
    readonly containment: Containment,
    private readonly cgroup: AttemptCgroup | undefined,
    private readonly memoryMb: number | undefined,
    /** With a tenant view: the attempt's tmpfs and server; `dir` is its work/ then. */
    private readonly tenant: TenantAttempt | undefined,
    private readonly network: 'none' | 'host',
    /** The CPU quota applied, CPUs, or undefined. */
    readonly cpuLimit: number | undefined,
  ) {}

  /**
   * Makes the work directory `<os.tmpdir()>/rollout-queue/<name>-p<pid>s<start>n<pidns>-XXXXXX`
   * (with a tenant view, a tmpfs of `diskMb` mounted there in the launch server's mount
   * namespace, holding work/, tmp/ and shm/) and, at a cgroup level, the cgroup of the same
   * name with its limits.
   * @throws CallerError (`NetworkNotAllowed`) for `network: "host"` on a worker without `allowNetwork`.
   * @throws the file-system error (disk full, no permission), the tmpfs mount or the cgroup write that failed; nothing is left behind.
   */
  static async create(request: SandboxRequest): Promise<Sandbox> {
    const containment = request.containment ?? currentContainment();
    const network = request.network ?? 'none';
    if (network === 'host' && !containment.allowNetwork) {
      // A Result's error type is the error's `type` (consumer/classify.ts).
      throw Object.assign(
        new CallerError(
          'sandbox.network is "host" but this worker does not grant the host network to the programs it runs: start the worker with --allow-network (RolloutWorker option allowNetwork), or leave sandbox.network out',
        ),
        { type: 'NetworkNotAllowed' },
      );
    }
    const dir = makeWorkDir(`${request.name}-${identityMarker(ownIdentity())}-`);
    let tenant: TenantAttempt | undefined;
    let cgroup: AttemptCgroup | undefined;
    const cpus = containment.cgroup?.cpu ? (request.cpus ?? DEFAULT_CPUS) : undefined;
    try {
      if (containment.tenant && containment.launcher) {
        tenant = await TenantAttempt.mount(containment, dir, request.diskMb ?? DEFAULT_DISK_MB);
      }
      if (containment.cgroup) {
        cgroup = AttemptCgroup.create(containment.cgroup, path.basename(dir), request.memoryMb, request.pidsMax ?? DEFAULT_PIDS_MAX, cpus);
      }
    } catch (err) {
      await tenant?.unmount();
      removeWorkDir(dir, 2);
      throw err;
    }
    const box = new Sandbox(tenant ? tenant.workDir : dir, containment, cgroup, request.memoryMb, tenant, network, cpus);
    live.add(box);
    return box;
  }

  /** What the program sees: its work dir, temp dir and PATH (inside the tenant view, or the host's). */
  get view(): ProgramView {
    if (this.tenant) return this.tenant.view;
    return { workDir: this.dir, tmpDir: this.dir, path: undefined };
  }

  /**
   * The argv that runs `argv`, with environment `env`, inside this sandbox through a launcher
   * program (see `launcherArgv`: `rq-launch`, else the util-linux chain).
   */
  command(argv: readonly [string, ...string[]], env: Readonly<Record<string, string>> = {}): [string, ...string[]] {
    return launcherArgv(this.containment, { argv, procsFiles: this.cgroup?.procsFiles ?? [], dataBytes: this.dataBytes, launcherLocale: this.launcherLocale(env) });
  }

  /** RLIMIT_DATA for the program, bytes: `memoryMb` where no cgroup bounds the whole tree. */
  private get dataBytes(): number | undefined {
    return !this.cgroup && this.memoryMb !== undefined ? this.memoryMb * 1024 * 1024 : undefined;
  }

  /** Whether the util-linux launcher runs with LC_ALL=C (see `usesLauncherLocale`). */
  private launcherLocale(env: Readonly<Record<string, string>>): boolean {
    return usesLauncherLocale(this.containment, this.cgroup !== undefined, env);
  }

  /**
   * Starts `argv` in the sandbox as the leader of a new process group, with piped stdio: through
   * the launch server at a namespace level where `containment.serve`, else through the launcher
   * program {@link command} names. Its stdio streams and pid are there once it emits `'spawn'`.
   * @throws like `spawn` (an error with `code` ENOENT/EACCES) when the program or its `#!`
   *   interpreter is missing or not executable, checked before any launcher runs.
   */
  spawn(argv: readonly [string, ...string[]], options: { cwd: string; env: Readonly<Record<string, string>> }): AttemptProcess {
    if (this.launcher) throw new Error('a sandbox runs one program; create another sandbox for the next');
    if (this.destroying) throw new Error('the sandbox is destroyed (state: destroyed)');
    const { containment } = this;
    let child: AttemptProcess;
    if (this.tenant) {
      // The program's paths are its view's; the check looks at the same files from here.
      checkProgram(this.tenant.hostPath(argv[0]), options.env.PATH ?? '', this.dir);
      child = this.tenant.launch(argv, { env: options.env, cgroupProcs: this.cgroup?.procsFiles ?? [], dataBytes: this.dataBytes, hostNetwork: this.network === 'host' });
    } else if (containment.serve && containment.launcher && containment.pidNamespace) {
      checkProgram(argv[0], options.env.PATH ?? '', options.cwd);
      child = LaunchServer.for(containment.launcher, containment.pidNamespace.includes('--user')).launch({
        argv,
        cwd: options.cwd,
        env: options.env,
        cgroupProcs: this.cgroup?.procsFiles ?? [],
        dataBytes: this.dataBytes,
      });
    } else {
      checkProgram(argv[0], options.env.PATH ?? '', options.cwd);
      const [program, ...args] = this.command(argv, options.env);
      const env = this.launcherLocale(options.env) ? { ...options.env, LC_ALL: 'C' } : options.env;
      child = spawn(program, args, { cwd: options.cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    }
    this.launcher = child;
    this.launcherExit = new Promise<void>((resolve) => {
      child.once('exit', () => {
        this.launcherGone = true;
        resolve();
      });
      child.once('error', () => resolve());
    });
    // Destroyed before a served attempt had started: it is killed as soon as it has.
    child.once('spawn', () => {
      if (this.destroying) this.signal('SIGKILL');
    });
    return child;
  }

  /**
   * Signals everything in the sandbox. SIGTERM goes to the launcher's process group (at a
   * namespace level PID 1 has no handler and ignores it; the artifact gets it). SIGKILL also
   * kills every cgroup member, at the process-group level every process of the launcher's own
   * subtree (and the groups they lead), and at a namespace level it ends the namespace.
   * At a namespace level once the launcher has exited there is nothing left to signal: see {@link namespaceEnded}.
   */
  signal(sig: 'SIGTERM' | 'SIGKILL'): void {
    if (this.namespaceEnded) return;
    const pid = this.launcher?.pid;
    if (pid !== undefined && !this.containment.pidNamespace && !this.cgroup) {
      // Process-group level: the subtree is frozen and walked at every signal and remembered, so
      // what left the group (setsid) is still killed after the leader died of the SIGTERM, and
      // nothing forked between the walk and the signal escapes it. What was remembered is walked
      // too: its leader may be gone and what it forked during the grace is below it.
      for (const root of [pid, ...this.subtree]) stopSubtree(root, { stopRoot: true, into: this.subtree });
      if (sig === 'SIGKILL') killPids([...this.subtree]);
      else {
        for (const below of this.subtree) signalQuietly(below, sig);
        signalQuietly(-pid, sig);
        // Stopped above: the signal is delivered once they run again.
        for (const target of [pid, -pid, ...this.subtree]) signalQuietly(target, 'SIGCONT');
        return;
      }
    }
    if (pid !== undefined) {
      try {
        process.kill(-pid, sig);
      } catch {
        // ESRCH: the group is gone.
      }
    }
    if (sig === 'SIGKILL') this.cgroup?.killAll();
  }

  /**
   * True at a namespace level once the launcher (`rq-launch`, its server's attempt init, or
   * `unshare`) has exited: its init has exited before it, and the kernel ends a namespace with
   * its init only after every other process in it (nested namespaces included) has been
   * reaped; only the init itself may still be dying of its death signal when the launcher was
   * killed first. Every cgroup member is in the
   * namespace (the init joins, the rest inherit), so no kill and no member walk is needed;
   * {@link destroy} proves the cgroup empty by removing it, and walks it only when that fails.
   */
  private get namespaceEnded(): boolean {
    return this.launcherGone && this.containment.pidNamespace !== null;
  }

  /**
   * The launcher's exit as the artifact's: at a namespace level PID 1 reports a signal death
   * as exit code 128+n, decoded back to the signal here (an artifact that itself exits with
   * 129–192 reads as that signal).
   */
  exitStatus(code: number | null, signal: NodeJS.Signals | null): { code: number | null; signal: NodeJS.Signals | null } {
    if (this.containment.pidNamespace && code !== null && code > 128 && code <= 128 + 64) {
      const name = Object.entries(os.constants.signals).find(([, n]) => n === code - 128)?.[0];
      if (name) return { code: null, signal: name as NodeJS.Signals };
    }
    return { code, signal };
  }

  /** Peak memory, OOM kills, CPU throttling and tenant disk use so far (null/0 where not measured). */
  usage(): SandboxUsage {
    const cgroup = this.cgroup ? this.cgroup.usage() : { peakBytes: null, oomKills: 0, cpuThrottledPeriods: null };
    const disk = this.tenant?.disk() ?? { usedBytes: null, full: false };
    return { ...cgroup, diskUsedBytes: disk.usedBytes, diskFull: disk.full };
  }

  /**
   * True once a tenant attempt's launcher exited without bubblewrap having started the program:
   * bubblewrap's own failure (its message is on the attempt's stderr), never the program's.
   */
  get setupFailed(): boolean {
    return (this.launcher as Partial<ServedAttempt> | undefined)?.setupFailed === true;
  }

  /** The memory limit this sandbox applies, MiB, or undefined. */
  get memoryLimitMb(): number | undefined {
    return this.cgroup || this.containment.launcher || this.containment.prlimit ? this.memoryMb : undefined;
  }

  /** The size of the tenant tmpfs, MiB, or undefined without a tenant view. */
  get diskLimitMb(): number | undefined {
    return this.tenant?.diskMb;
  }

  /**
   * Kills everything in the sandbox, waits until it is gone (launcher exited, cgroup empty;
   * bounded), removes the cgroup and the work directory. Idempotent; never rejects (what
   * cannot be removed now is left to the sweep of dead attempts).
   */
  destroy(): Promise<void> {
    this.destroying ??= (async () => {
      this.signal('SIGKILL');
      if (this.launcherExit && !this.launcherGone) await Promise.race([this.launcherExit, delay(2_000)]);
      // Unmounted before the cgroup goes, so its pages are uncharged from the attempt, not the parent.
      await this.tenant?.unmount();
      if (this.cgroup) {
        // A removed cgroup was empty (rmdir fails with EBUSY while a member is left or still
        // exiting), so its members are walked and killed only when removal fails.
        for (let i = 0; i < 100 && !this.cgroup.remove(); i++) {
          this.cgroup.killAll();
          await delay(20);
        }
      }
      if (this.tenant) this.tenant.removeMountPoint();
      else removeWorkDir(this.dir, 3);
      live.delete(this);
    })();
    return this.destroying;
  }

  /**
   * {@link destroy} without waiting, for a process about to exit: kill, one removal try each.
   * A tenant tmpfs goes with its launch server's mount namespace (the server dies with this
   * process); removing its mount point from here also detaches it there (a mount point removed
   * in another mount namespace is unmounted, Linux ≥ 3.18).
   */
  destroySync(): void {
    this.signal('SIGKILL');
    this.cgroup?.remove();
    if (this.tenant) this.tenant.removeMountPoint();
    else removeWorkDir(this.dir, 2);
    live.delete(this);
  }
}

/** Destroys every sandbox of this process still alive (what an attempt left); resolves when all are gone. */
export async function destroyLiveSandboxes(): Promise<void> {
  if (live.size === 0) return;
  await Promise.all([...live].map((box) => box.destroy()));
}

/** {@link destroyLiveSandboxes} synchronously, for an exiting process. */
export function destroyLiveSandboxesSync(): void {
  for (const box of [...live]) box.destroySync();
}

/** Sandboxes of this process not yet destroyed. */
export function liveSandboxCount(): number {
  return live.size;
}
