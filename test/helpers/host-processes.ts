import { readdirSync, readFileSync } from 'node:fs';

/** A process as the host's /proc shows it. */
export interface HostProcess {
  readonly pid: number;
  readonly ppid: number;
  readonly state: string;
  /** `NSpid`: its pid in each nested PID namespace, outermost first. */
  readonly nsPids: readonly number[];
  readonly argv: readonly string[];
}

/** Every process on the machine (tests only: they look for what a rollout may have left). */
export function hostProcesses(): HostProcess[] {
  const found: HostProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const field = (name: string): string => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1] ?? '';
      found.push({
        pid: Number(entry),
        ppid: Number(field('PPid')),
        state: field('State').charAt(0),
        nsPids: field('NSpid').split(/\s+/).filter(Boolean).map(Number),
        argv: readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean),
      });
    } catch {
      // Exited while we looked.
    }
  }
  return found;
}

/**
 * Live (not zombie) processes running exactly `argv` whose pid in their innermost namespace is
 * `innerPid`: what an artifact reports as a child's pid (`p.pid`) is namespace-local when it
 * runs in a PID namespace and the host pid otherwise; this matches both.
 */
export function liveProcessesLike(innerPid: number, argv: readonly string[]): HostProcess[] {
  return hostProcesses().filter(
    (p) => p.state !== 'Z' && p.nsPids[p.nsPids.length - 1] === innerPid && p.argv.length === argv.length && p.argv.every((a, i) => a === argv[i]),
  );
}

/** Live (not zombie) processes running exactly `argv`, in any PID namespace (pids as the host sees them). */
export function liveProcessesRunning(argv: readonly string[]): HostProcess[] {
  return hostProcesses().filter((p) => p.state !== 'Z' && p.argv.length === argv.length && p.argv.every((a, i) => a === argv[i]));
}
