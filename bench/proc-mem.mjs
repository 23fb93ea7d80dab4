// Memory of a process tree from /proc, for the benches (never for `npm test`).
import { readFileSync } from 'node:fs';
import { descendantsOf } from './proc-cpu.mjs';

/** `Rss` and `Pss` of one process, KiB, from /proc/<pid>/smaps_rollup; zeros once it is gone. */
export function smapsRollup(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kib = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    return { rssKiB: kib('Rss'), pssKiB: kib('Pss') };
  } catch {
    return { rssKiB: 0, pssKiB: 0 };
  }
}

/**
 * PSS and RSS of `root` and every live descendant, MiB, and how many processes that is. PSS
 * (proportional set size) counts a page shared by n processes as 1/n in each, so the sum over a
 * tree counts the tree's shared pages (node's code, the libraries, copy-on-write heap) once; RSS
 * counts them in every process.
 */
export function treeMemory(root) {
  const pids = [root, ...descendantsOf(root)];
  let rssKiB = 0;
  let pssKiB = 0;
  for (const pid of pids) {
    const one = smapsRollup(pid);
    rssKiB += one.rssKiB;
    pssKiB += one.pssKiB;
  }
  return { pssMb: pssKiB / 1024, rssMb: rssKiB / 1024, processes: pids.length };
}
