import { fork, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Containment } from '../sandbox/index.js';

const CHILD_MAIN = fileURLToPath(new URL('./child-main.js', import.meta.url));

/**
 * Whether rollout children get a PID namespace of their own (`unshare --pid --fork`, the child
 * its PID 1): only when this worker is PID 1 itself. Node reaps only the processes it spawned,
 * so whatever a crashed or killed child leaves would otherwise be re-parented to the worker and
 * stay a zombie; in its own namespace it dies and is reaped with the child. (Elsewhere the
 * host's init reaps such orphans, and a node PID 1 in the child would not.) Needs a privileged
 * namespace (not `--user`), so the child's /proc view of the worker stays readable.
 */
export function ownNamespace(containment: Containment): boolean {
  return process.pid === 1 && containment.pidNamespace !== null && !containment.pidNamespace.includes('--user');
}

/** Raised when a child exits before it is ready (bad execArgv, missing file, no memory). */
export class ChildStartError extends Error {
  constructor(
    readonly exitCode: number | null,
    readonly signal: string | null,
    readonly stderrTail: string,
  ) {
    super(`rollout child failed to start (exit code ${exitCode}, signal ${signal}): ${stderrTail.trim().slice(-500) || '(no stderr)'}`);
    this.name = 'ChildStartError';
  }
}

/**
 * Forks `child-main.js` with its heap limit, a minimal environment, an IPC channel (JSON) and the
 * stage board at fd 4; detached, so it leads its own process group. Where `setpriv` exists it
 * starts with PR_SET_PDEATHSIG = SIGKILL (it dies with the worker even when its event loop is
 * stuck), and in a PID namespace of its own when the worker is PID 1 ({@link ownNamespace}).
 * @throws the spawn error (the caller closes the board).
 */
export function spawnChild(options: { readonly memoryMb: number; readonly execArgv: readonly string[]; readonly env: NodeJS.ProcessEnv; readonly containment: Containment }, stageBoard: number): ChildProcess {
  const execArgv = [`--max-old-space-size=${options.memoryMb}`, ...options.execArgv];
  const stdio: ['ignore', 'pipe', 'pipe', 'ipc', number] = ['ignore', 'pipe', 'pipe', 'ipc', stageBoard];
  // fork() is spawn(execPath) with an IPC channel; setpriv execs node in place, so the channel
  // (NODE_CHANNEL_FD) and the pid are node's own.
  const launcher = [
    ...(options.containment.setpriv ? [options.containment.setpriv, '--pdeathsig', 'KILL', '--'] : []),
    ...(ownNamespace(options.containment) ? [...(options.containment.pidNamespace ?? []), '--'] : []),
  ];
  const [program = process.execPath, ...args] = [...launcher, process.execPath, ...execArgv, CHILD_MAIN];
  return launcher.length > 0
    ? spawn(program, args, { env: options.env, detached: true, stdio, serialization: 'json' })
    : fork(CHILD_MAIN, [], { execArgv, env: options.env, detached: true, stdio, serialization: 'json' });
}
