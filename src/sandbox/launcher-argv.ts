import type { Containment } from './containment.js';

/**
 * Joins the attempt's cgroups (`cgroup.procs` files before `--`), then execs the rest: so the
 * artifact is inside before its first fork. Only without a PID namespace; with one, its init joins.
 * Both scripts start with {@link unsetCommand}.
 */
const JOIN_SCRIPT = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || { echo "rollout-queue sandbox: cannot join cgroup $f" >&2; exit 125; }; shift; done; shift; exec "$@"';

/**
 * PID 1 of the attempt's namespace: first joins the attempt's cgroups (`cgroup.procs` files
 * before `--`; `$$` is 1 here, which the kernel reads in the writer's own namespace), so the
 * artifact is inside before it starts, without a shell layer of its own. Then runs the artifact
 * as its child (pid 2, so the artifact keeps ordinary signal semantics; PID 1 ignores signals
 * it has no handler for), reaps every orphan the artifact leaves (the shell's wait reaps any
 * child), and exits with the artifact's status, 128+n for a signal. Its exit makes the kernel
 * kill whatever is left in the namespace.
 * A non-interactive shell gives a background job /dev/null as stdin, so stdin goes through fd 3;
 * the shell's own notes ("Killed") go to /dev/null, the artifact's stderr through fd 4.
 */
const INIT_SCRIPT =
  'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || { echo "rollout-queue sandbox: cannot join cgroup $f" >&2; exit 125; }; shift; done; shift; ' +
  'exec 3<&0 4>&2 2>/dev/null; "$@" 0<&3 2>&4 3<&- 4>&- & exec 3<&- 4>&-; wait $!';

/**
 * The scripts' first command: unsets the PWD the shell exports, and the LC_ALL the launcher's
 * environment got (see {@link Sandbox.spawn}), so the artifact's environment stays exactly the runner's.
 */
function unsetCommand(launcherLocale: boolean): string {
  return launcherLocale ? 'unset PWD LC_ALL; ' : 'unset PWD; ';
}

/** What {@link launcherArgv} wraps: the program, the cgroups it joins, its RLIMIT_DATA. */
export interface LauncherRequest {
  readonly argv: readonly [string, ...string[]];
  /** `cgroup.procs` files of the attempt's cgroups. */
  readonly procsFiles: readonly string[];
  /** RLIMIT_DATA, bytes, or undefined for none. */
  readonly dataBytes: number | undefined;
  /** Whether the launcher's environment got LC_ALL=C, to unset before the program (see {@link usesLauncherLocale}). */
  readonly launcherLocale: boolean;
}

/**
 * The argv that runs `request.argv` inside the containment through a launcher program. With
 * `rq-launch` (`containment.launcher`) one program does it all: death with this process
 * (`--parent`), the PID namespace and its init, the cgroup joins, `RLIMIT_DATA`. Else the
 * util-linux chain, where every layer is an exec except `unshare --fork` and the namespace's
 * init: each layer costs a program start. The tools are named by absolute path (no PATH search
 * per layer), and `setpriv` comes first: its PR_SET_PDEATHSIG survives the execs after it.
 */
export function launcherArgv(containment: Containment, request: LauncherRequest): [string, ...string[]] {
  const { argv, procsFiles, dataBytes } = request;
  if (containment.launcher) {
    const launch = [...(containment.pidNamespace ?? [containment.launcher]), '--parent', String(process.pid)];
    for (const file of procsFiles) launch.push('--cgroup', file);
    if (dataBytes !== undefined) launch.push(`--data=${dataBytes}`);
    return [...launch, '--', ...argv] as [string, ...string[]];
  }
  const unset = unsetCommand(request.launcherLocale);
  const chain: string[] = [];
  if (dataBytes !== undefined && containment.prlimit) chain.push(containment.prlimit, `--data=${dataBytes}`, '--');
  if (containment.setpriv) chain.push(containment.setpriv, '--pdeathsig', 'KILL', '--');
  if (procsFiles.length > 0 && !containment.pidNamespace) chain.push('/bin/sh', '-c', unset + JOIN_SCRIPT, 'rq-join', ...procsFiles, '--');
  if (containment.pidNamespace) chain.push(...containment.pidNamespace, '--', '/bin/sh', '-c', unset + INIT_SCRIPT, 'rq-init', ...procsFiles, '--');
  return [...chain, ...argv] as [string, ...string[]];
}

/**
 * Whether the util-linux launcher runs with LC_ALL=C: `setpriv` and `unshare` call setlocale,
 * which under e.g. LANG=C.UTF-8 reads a dozen locale files per tool (~0.3 ms each here) for
 * messages they never print. Only where one of the scripts above runs last (a cgroup to join or
 * a PID namespace), to unset it again before the artifact starts, and only when the artifact's
 * own environment has no LC_ALL. `rq-launch` reads no locale and passes the environment through untouched.
 */
export function usesLauncherLocale(containment: Containment, joinsCgroup: boolean, env: Readonly<Record<string, string>>): boolean {
  return !containment.launcher && env.LC_ALL === undefined && (joinsCgroup || containment.pidNamespace !== null);
}
