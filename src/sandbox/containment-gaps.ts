/**
 * The boundaries an attempt of model-written code is kept inside (DESIGN.md "Tenancy"), one
 * name each. A boundary this host could not close is a {@link ContainmentGap}; docs/security.md
 * has the table of boundaries per level and the test that proves each one.
 * - `network`: only the attempt's own loopback (no Redis, no gateway, no metadata service);
 * - `proc`: a private /proc (no other process' environment, command line or memory);
 * - `filesystem`: the system read-only; the worker's files, home, temp dir and other attempts' dirs invisible;
 * - `identity`: a kernel uid that is neither root nor the worker's, no capabilities, no_new_privs;
 * - `disk`: writes only to the work dir, /tmp and /dev/shm, one size-capped tmpfs gone with the attempt;
 * - `cpu`: CPU time capped (`sandbox.cpus`, a cgroup quota);
 * - `pid`: a PID namespace (nothing the attempt starts outlives it);
 * - `memory`: memory capped over the attempt's whole process tree (a cgroup);
 * - `processes`: the number of processes capped (a cgroup's pids.max), so a fork bomb stops there.
 */
export const BOUNDARIES = ['network', 'proc', 'filesystem', 'identity', 'disk', 'cpu', 'pid', 'memory', 'processes'] as const;

/** One of {@link BOUNDARIES}. */
export type Boundary = (typeof BOUNDARIES)[number];

/** A boundary this host does not close, and why, in one sentence (JSON data). */
export interface ContainmentGap {
  readonly boundary: Boundary;
  readonly reason: string;
}

/** How to close each boundary, for `--containment strict`'s refusal (one clause each). */
export const GAP_FIXES: Readonly<Record<Boundary, string>> = {
  network: 'install bubblewrap (Debian: apt-get install bubblewrap) and build rq-launch (a C compiler at npm ci), on a host that allows user namespaces',
  proc: 'the same as network: the private /proc comes with bubblewrap\'s PID namespace',
  filesystem: 'the same as network: the read-only system view is bubblewrap\'s',
  identity: 'run the worker as root (it then drops each attempt to uid 65534): unprivileged, an attempt keeps the worker\'s kernel uid',
  disk: 'the same as network: the per-attempt tmpfs is mounted by rq-launch\'s launch server',
  cpu: 'give the worker a writable cgroup with the cpu controller (v1 cpu hierarchy or v2 cpu.max)',
  pid: 'run as root or allow user namespaces, and build rq-launch',
  memory: 'give the worker a writable cgroup with the memory controller (mount /sys/fs/cgroup read-write or delegate a v2 subtree)',
  processes: 'give the worker a writable cgroup with the pids controller',
};

/** The boundary names of `gaps`, in vocabulary order. */
export function gapNames(gaps: readonly ContainmentGap[]): Boundary[] {
  return BOUNDARIES.filter((boundary) => gaps.some((gap) => gap.boundary === boundary));
}

/**
 * The start line's account of `gaps`: `containmentGaps: none`, or how many of the
 * {@link BOUNDARIES} are open, then each gap's boundary, reason and fix ({@link GAP_FIXES}), so
 * an operator reading the line (logged at warn when any is open) knows what to change.
 */
export function gapsText(gaps: readonly ContainmentGap[]): string {
  if (gaps.length === 0) return 'containmentGaps: none';
  const each = gaps.map((gap) => `${gap.boundary} (${gap.reason}; fix: ${GAP_FIXES[gap.boundary]})`);
  return `containmentGaps: ${gaps.length} of ${BOUNDARIES.length} boundaries open: ${each.join('; ')}`;
}
