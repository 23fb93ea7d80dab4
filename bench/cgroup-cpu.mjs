// CPU of a whole trial process tree from a cgroup of its own, for the benches (never for `npm test`).
//
// Why not /proc alone (proc-cpu.mjs): at the sealed level each program runs under bubblewrap as
// PID 1 of a PID namespace; when it exits, the kernel kills and reaps what is left in the namespace
// without adding their CPU to any parent's cutime, so a walk of /proc misses most of the
// artifact's CPU. A cgroup counts every task that ever ran in it. On cgroup v1 the cpuacct
// hierarchy is one the plane never moves attempts out of (their cgroups are in memory, pids and
// cpu), so a cpuacct cgroup around the trial counts the tenants too. Not counted either way:
// kernel work done for them on other threads (a network namespace is torn down by a kworker).
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

function cpuacctMount() {
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const [, dir, type, options] = line.split(' ');
    if (type !== 'cgroup' || !options) continue;
    const list = options.split(',');
    // Its own hierarchy: co-mounted with cpu it would be where attempts get their CPU quota.
    if (list.includes('cpuacct') && !list.includes('cpu') && !list.includes('memory') && !list.includes('pids')) return dir;
  }
  return undefined;
}

/**
 * Puts this process (and so everything it starts from now on) in a cpuacct cgroup of its own and
 * returns a meter of its CPU in ms, or undefined where that is not possible (cgroup v2 only, not
 * root): the caller then falls back to /proc and says so.
 */
export function trialCpuMeter() {
  const mount = cpuacctMount();
  if (!mount) return undefined;
  const dir = path.join(mount, `rq-bench-${process.pid}`);
  try {
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
  } catch {
    return undefined;
  }
  process.once('exit', () => {
    try {
      writeFileSync(path.join(mount, 'cgroup.procs'), String(process.pid));
      rmdirSync(dir);
    } catch {
      // A leftover empty cgroup; harmless.
    }
  });
  return { read: () => Number(readFileSync(path.join(dir, 'cpuacct.usage'), 'utf8')) / 1e6 };
}
