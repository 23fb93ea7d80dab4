// CPU of processes from /proc, for the benches (never for `npm test`).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim() || 100);

/** The fields of /proc/<pid>/stat after the command name (index 0 is field 3, state), or undefined once it is gone. */
function statFields(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** utime+stime+cutime+cstime of `pid` (its own CPU and what it reaped), ms in clock ticks; 0 once it is gone. */
export function statCpuMs(pid) {
  const fields = statFields(pid);
  return fields ? (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * TICK_MS : 0;
}

/** cutime+cstime of `pid` (what it reaped), ms in clock ticks; 0 once it is gone. */
export function reapedCpuMs(pid) {
  const fields = statFields(pid);
  return fields ? (Number(fields[13]) + Number(fields[14])) * TICK_MS : 0;
}

/** The parent pid of `pid`, or 0 once it is gone. */
export function parentOf(pid) {
  return Number(statFields(pid)?.[1] ?? 0);
}

/** CPU of every live thread of `pid`, ms, from /proc/<pid>/task/<tid>/schedstat (ns, not ticks). */
export function threadsCpuMs(pid) {
  let total = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
      } catch {
        // The thread exited meanwhile.
      }
    }
  } catch {
    // The process is gone.
  }
  return total;
}

/** CPU of the thread `tid` of `pid` (its main thread when `tid` is `pid`), ms, from schedstat (ns). */
export function threadCpuMs(pid, tid = pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return 0;
  }
}

/** Every live process below `root` in the process tree (one scan of /proc). */
export function descendantsOf(root) {
  const parent = new Map();
  for (const name of readdirSync('/proc')) {
    if (/^\d+$/.test(name)) parent.set(Number(name), parentOf(Number(name)));
  }
  const below = [];
  for (const pid of parent.keys()) {
    for (let p = parent.get(pid), hops = 0; p > 1 && hops < 64; p = parent.get(p) ?? 0, hops++) {
      if (p === root) {
        below.push(pid);
        break;
      }
    }
  }
  return below;
}

/** CPU ms of this process and every live descendant (the dead ones are in their parents' cutime). */
export function treeCpuMs() {
  return descendantsOf(process.pid).reduce((sum, pid) => sum + statCpuMs(pid), statCpuMs(process.pid));
}
