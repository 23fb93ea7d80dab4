import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmdirSync } from 'node:fs';
import path from 'node:path';
import { detectInterpreters } from './interpreters.js';
import { identityMarker, ownIdentity } from './process-identity.js';
import { findOnPath } from './program-check.js';
import { workRoot } from './work-root.js';

/** Where the program finds its work dir, its /tmp and its /dev/shm inside the tenant view. */
export const TENANT_WORK_DIR = '/work';
export const TENANT_TMP_DIR = '/tmp';

/** The unprivileged uid and gid a root worker drops each attempt to (Debian's nobody:nogroup). */
export const TENANT_UID = 65534;

/** Directories standard programs are on, after the interpreters' own. */
const SYSTEM_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** Top-level entries a merged-/usr system has as symlinks (`/bin -> usr/bin`), else as directories. */
const ROOT_ENTRIES = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

/** Most read-only paths (rq-launch's MAX_RO). */
const MAX_READ_ONLY = 64;

/**
 * How an attempt of model-written code sees the machine (JSON data, sent to rollout children):
 * bubblewrap gives it new user, mount, PID, network, IPC, UTS and cgroup namespaces, a private
 * /proc and /dev, the paths of {@link readOnly} read-only, a read-only root (`/big`, `/home` cannot
 * be made), and writable only its work dir, /tmp and /dev/shm (one tmpfs per attempt, mounted by
 * the launch server). See docs/security.md.
 */
export interface TenantView {
  /** Absolute path of bubblewrap (`bwrap`). */
  readonly bwrap: string;
  /**
   * The uid and gid a root worker's attempt init drops to before it execs bubblewrap, so the
   * program's kernel uid is neither root nor the worker's; null for an unprivileged worker (the
   * program then has the worker's kernel uid and only sees another: the `identity` gap).
   */
  readonly identity: { readonly uid: number; readonly gid: number } | null;
  /** The uid (and gid) the program sees. */
  readonly programUid: number;
  /** Host paths exposed read-only (system, interpreters, the operator's `exposeReadOnly`), in stage order. */
  readonly readOnly: readonly string[];
  /** Top-level symlinks of a merged-/usr host (`["bin", "usr/bin"]`), made the same inside. */
  readonly rootLinks: readonly (readonly [string, string])[];
  /** The program's PATH: the interpreters' bin directories, then the system's. */
  readonly programPath: string;
}

/** Where one attempt's writable tmpfs is, as the launch server's mount namespace sees it. */
export interface TenantMount {
  /** The tmpfs mount point (holds work/, tmp/, shm/). */
  readonly root: string;
  /** Directory the server staged the read-only paths in (`<stage>/<index>`). */
  readonly stage: string;
}

/** The tenant view, or why this host cannot have it (one sentence). */
export type TenantViewDetection = { readonly view: TenantView } | { readonly missing: string };

/** `paths` without duplicates and without a path below another kept one. */
function outermost(paths: readonly string[]): string[] {
  const sorted = [...new Set(paths.map((p) => path.resolve(p)))].sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const candidate of sorted) {
    if (!kept.some((outer) => outer === '/' || candidate === outer || candidate.startsWith(`${outer}/`))) kept.push(candidate);
  }
  return kept;
}

/** bubblewrap's arguments up to (not including) the `--` before the program. */
export function bwrapArgs(view: TenantView, where: TenantMount | { readonly stage: string; readonly probe: true }, options: { readonly hostNetwork: boolean }): string[] {
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--hostname', 'rollout'];
  if (options.hostNetwork) args.push('--share-net');
  if (!view.identity) args.push('--uid', String(view.programUid), '--gid', String(view.programUid));
  view.readOnly.forEach((host, i) => args.push('--ro-bind', `${where.stage}/${i}`, host));
  for (const [name, target] of view.rootLinks) args.push('--symlink', target, `/${name}`);
  args.push('--proc', '/proc', '--dev', '/dev');
  if ('root' in where) {
    args.push('--json-status-fd', '3');
    args.push('--bind', `${where.root}/work`, TENANT_WORK_DIR, '--bind', `${where.root}/tmp`, TENANT_TMP_DIR, '--bind', `${where.root}/shm`, '/dev/shm');
  } else {
    args.push('--tmpfs', TENANT_WORK_DIR, '--tmpfs', TENANT_TMP_DIR);
  }
  // bubblewrap's root is a tmpfs outside sandbox.diskMb: left writable, a program filled it (800 MiB
  // at /big with diskMb 512) and made /home, /var (fresh-user report). Read-only after every mount
  // (the remount is not recursive), only the work dir, /tmp and /dev/shm stay writable.
  args.push('--remount-ro', '/');
  args.push('--chdir', TENANT_WORK_DIR);
  return args;
}

/** The view for this process: identity by its uid, read-only paths from the host and `exposeReadOnly`. */
function viewFor(bwrap: string, exposeReadOnly: readonly string[], pathVar: string): TenantView {
  const root = process.getuid?.() === 0;
  const worker = process.getuid?.() ?? 0;
  const interpreters = detectInterpreters(pathVar);
  const rootLinks: Array<[string, string]> = [];
  const system = ['/usr', '/etc'];
  for (const name of ROOT_ENTRIES) {
    try {
      const stats = lstatSync(`/${name}`);
      if (stats.isSymbolicLink()) rootLinks.push([name, readlinkSync(`/${name}`)]);
      else if (stats.isDirectory()) system.push(`/${name}`);
    } catch {
      // Not on this host.
    }
  }
  const readOnly = outermost([...system, ...interpreters.prefixes, ...exposeReadOnly].filter((p) => existsSync(p)));
  const visible = (dir: string): boolean => readOnly.some((outer) => dir === outer || dir.startsWith(`${outer}/`)) || SYSTEM_PATH.includes(dir);
  return {
    bwrap,
    identity: root ? { uid: TENANT_UID, gid: TENANT_UID } : null,
    // Unprivileged, the uid seen differs from the worker's as well (its kernel uid is the worker's).
    programUid: !root && worker === TENANT_UID ? TENANT_UID - 1 : TENANT_UID,
    readOnly,
    rootLinks,
    programPath: [...new Set([...interpreters.binDirs.filter((dir) => visible(dir) && !SYSTEM_PATH.includes(dir)), ...SYSTEM_PATH])].join(":"),
  };
}

/**
 * The tenant view for this host, checked by running `true` in it once (a few ms): through
 * `rq-launch --probe`, which sets up what its launch server sets up (mount namespace, read-only
 * stage, identity drop, PID namespace) and execs bubblewrap as a served attempt does.
 * @param options.launcher `rq-launch`; the tenant view exists only with its launch server.
 * @param options.userNamespace whether the launch server runs in a user namespace (unprivileged worker).
 * @param options.exposeReadOnly absolute host paths to expose read-only besides the system and interpreters.
 */
export function detectTenantView(options: { readonly launcher: string | null; readonly serve: boolean; readonly userNamespace: boolean; readonly exposeReadOnly: readonly string[] }): TenantViewDetection {
  const pathVar = process.env.PATH ?? SYSTEM_PATH.join(':');
  const bwrap = findOnPath('bwrap', pathVar);
  if (!bwrap) return { missing: 'bubblewrap (bwrap) is not installed' };
  if (!options.launcher || !options.serve) return { missing: "the tenant view needs rq-launch's launch server (the auto launcher, where rq-launch was built and a PID namespace can be made)" };
  const view = viewFor(bwrap, options.exposeReadOnly, pathVar);
  if (view.readOnly.length > MAX_READ_ONLY) return { missing: `more than ${MAX_READ_ONLY} read-only paths to expose` };
  let stage: string;
  try {
    mkdirSync(workRoot(), { recursive: true });
    stage = mkdtempSync(path.join(workRoot(), `probe-${identityMarker(ownIdentity())}-`));
  } catch (err) {
    return { missing: `cannot make a directory in the work root ${workRoot()} (${(err as Error).message}); give the worker a TMPDIR it may write` };
  }
  try {
    const argv = [
      '--probe',
      ...(options.userNamespace ? ['--user'] : []),
      '--tenant', stage,
      ...view.readOnly.flatMap((p) => ['--ro', p]),
      ...(view.identity ? ['--identity', `${view.identity.uid}:${view.identity.gid}`] : []),
      '--', bwrap, ...bwrapArgs(view, { stage, probe: true }, { hostNetwork: false }), '--', 'true',
    ];
    const probe = spawnSync(options.launcher, argv, { encoding: 'utf8', timeout: 10_000, env: { PATH: view.programPath } });
    if (probe.status !== 0) {
      const why = (probe.stderr || probe.error?.message || `exit ${probe.status ?? probe.signal}`).trim().split('\n')[0];
      return { missing: `bubblewrap could not start a program here (${why})` };
    }
  } finally {
    rmdirSync(stage);
  }
  return { view };
}
