import { rmdirSync, statfsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Containment } from './containment.js';
import { LaunchServer, type ServedAttempt } from './launch-server.js';
import { bwrapArgs, TENANT_TMP_DIR, TENANT_WORK_DIR, type TenantView } from './tenant-view.js';

const MIB = 1024 * 1024;

/** Inodes per MiB of an attempt's tmpfs (16 KiB a file on average): bounds what empty files can cost. */
const INODES_PER_MB = 64;

/** Free space below which the tenant tmpfs counts as full (a write that needed more failed with ENOSPC). */
const FULL_BELOW_BYTES = 64 * 1024;

/** Longest wait for the launch server to unmount an attempt's tmpfs, ms (it answers in well under 1 ms). */
const UNMOUNT_WAIT_MS = 2_000;

/**
 * The tenant part of one attempt (see `TenantView`): its tmpfs, mounted by the launch server in
 * the server's own mount namespace on the attempt's (empty) host directory and reached from here
 * through `/proc/<server>/root`, and the launch of its program under bubblewrap.
 */
export class TenantAttempt {
  private unmounting: Promise<void> | undefined;

  private constructor(
    private readonly server: LaunchServer,
    /** The mount point: the attempt's directory on the host, empty there. */
    private readonly root: string,
    private readonly tenant: TenantView,
    /** Size of the tmpfs, MiB. */
    readonly diskMb: number,
  ) {}

  /**
   * Mounts a tmpfs of `diskMb` MiB on `root` (an empty directory this process made) through the
   * launch server of `containment`, owned by the attempt's uid.
   * @throws (rejects) the server's refusal (code ENOSPC, ENOMEM, ELAUNCH…) or `ELAUNCHER` when it is gone.
   */
  static async mount(containment: Containment, root: string, diskMb: number): Promise<TenantAttempt> {
    const tenant = containment.tenant;
    if (!tenant || !containment.launcher) throw new Error('a tenant attempt needs a containment with a tenant view and rq-launch');
    const server = LaunchServer.for(containment.launcher, containment.pidNamespace?.includes('--user') ?? false, tenant);
    // An unprivileged server's user namespace maps only the worker's uid, as root.
    const owner = tenant.identity ?? { uid: 0, gid: 0 };
    await server.mount({ root, bytes: diskMb * MIB, inodes: Math.max(4096, diskMb * INODES_PER_MB), uid: owner.uid, gid: owner.gid });
    return new TenantAttempt(server, root, tenant, diskMb);
  }

  /** The program's work dir as this process reaches it. */
  get workDir(): string {
    return `${this.server.rootPrefix}${this.root}/work`;
  }

  /** What the program sees. */
  get view(): { readonly workDir: string; readonly tmpDir: string; readonly path: string } {
    return { workDir: TENANT_WORK_DIR, tmpDir: TENANT_TMP_DIR, path: this.tenant.programPath };
  }

  /** `program` as this process finds it: a path in the program's work dir maps to {@link workDir}; the rest is the same file here. */
  hostPath(program: string): string {
    if (program === TENANT_WORK_DIR || program.startsWith(`${TENANT_WORK_DIR}/`)) return this.workDir + program.slice(TENANT_WORK_DIR.length);
    if (program.includes('/') && !path.isAbsolute(program)) return path.join(this.workDir, program);
    return program;
  }

  /** Starts `argv` (paths as the program sees them) under bubblewrap, through the launch server. */
  launch(
    argv: readonly [string, ...string[]],
    options: { readonly env: Readonly<Record<string, string>>; readonly cgroupProcs: readonly string[]; readonly dataBytes: number | undefined; readonly hostNetwork: boolean },
  ): ServedAttempt {
    const stage = this.server.stage ?? '';
    const bwrap = [this.tenant.bwrap, ...bwrapArgs(this.tenant, { root: this.root, stage }, { hostNetwork: options.hostNetwork }), '--', ...argv] as [string, ...string[]];
    return this.server.launch({
      argv: bwrap,
      cwd: this.root,
      env: options.env,
      cgroupProcs: options.cgroupProcs,
      dataBytes: options.dataBytes,
      tenant: { identity: this.tenant.identity },
    });
  }

  /** Bytes in use on the tmpfs and whether it is (next to) full, or nulls once it is gone. */
  disk(): { readonly usedBytes: number | null; readonly full: boolean } {
    try {
      const stats = statfsSync(`${this.server.rootPrefix}${this.root}`);
      const availBytes = stats.bavail * stats.bsize;
      return { usedBytes: (stats.blocks - stats.bfree) * stats.bsize, full: availBytes < FULL_BELOW_BYTES || stats.ffree === 0 };
    } catch {
      return { usedBytes: null, full: false };
    }
  }

  /** Unmounts the tmpfs (idempotent; never rejects: a server that is gone took the mount with it). */
  unmount(): Promise<void> {
    this.unmounting ??= Promise.race([this.server.unmount(this.root).catch(() => {}), delay(UNMOUNT_WAIT_MS)]);
    return this.unmounting;
  }

  /** Removes the (empty) mount point on the host; what cannot be removed now is left to the sweep. */
  removeMountPoint(): void {
    try {
      rmdirSync(this.root);
    } catch {
      // Left to the sweep of dead attempts.
    }
  }
}
