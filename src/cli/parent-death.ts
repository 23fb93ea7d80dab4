import { spawnSync } from 'node:child_process';
import { findOnPath } from '../sandbox/program-check.js';

let prefix: readonly string[] | undefined;

/**
 * `argv` started so that the process gets SIGTERM when this one dies, however it dies (SIGKILL
 * too): behind util-linux `setpriv --pdeathsig SIGTERM --`, which sets the parent-death signal
 * (prctl `PR_SET_PDEATHSIG`, kept across its exec of the program, which keeps its pid). The
 * demo starts its workers and its redis-server in process groups of their own, so that a
 * terminal Ctrl-C reaches the demo only and it stops them in order; a demo killed outright
 * left them running. Where setpriv is missing or refuses `--pdeathsig` (util-linux < 2.33,
 * not Linux), `argv` unchanged. The signal is sent when the thread that spawned the process
 * exits: Node spawns from its main thread.
 * @param argv program and arguments, e.g. `['redis-server', '--port', '6390']`.
 */
export function dyingWithThisProcess(argv: readonly string[]): string[] {
  if (prefix === undefined) {
    const setpriv = findOnPath('setpriv', process.env.PATH ?? '/usr/bin:/bin');
    const works = setpriv !== undefined && spawnSync(setpriv, ['--pdeathsig', 'SIGTERM', '--', 'true'], { stdio: 'ignore', timeout: 5000 }).status === 0;
    prefix = works ? [setpriv, '--pdeathsig', 'SIGTERM', '--'] : [];
  }
  return [...prefix, ...argv];
}
