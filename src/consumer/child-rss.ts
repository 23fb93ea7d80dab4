import { openSync, readFileSync, readSync } from 'node:fs';
import { endianness } from 'node:os';

/**
 * Resident set size after every rollout, cheaply: `process.memoryUsage.rss()` opens, reads and
 * closes /proc/self/stat (the costliest of the /proc files to generate); this keeps
 * /proc/self/statm open and re-reads it at offset 0 (one syscall), times the page size read
 * once from the auxiliary vector (AT_PAGESZ). statm's `resident` counts the same pages as
 * stat's `rss` (file + anon + shmem); newer kernels sum it exactly where stat's is read without
 * the per-CPU batches, so the two may differ by a few hundred KiB. Anything unexpected (no /proc, a 32-bit or foreign
 * auxv, a kept fd that no longer reads as statm because rollout code closed it and the number
 * went to a file of its own) falls back to `process.memoryUsage.rss()` for good.
 */
const STATM = /^\d+ (\d+) \d+ \d+ \d+ \d+ \d+\n$/;
const AT_PAGESZ = 6n;
const buffer = Buffer.alloc(256);
/** The kept statm fd; `unusable` once opening or a read failed (for good); undefined before the first call. */
let source: { readonly fd: number; readonly pageBytes: number } | 'unusable' | undefined;

function pageBytes(): number | undefined {
  if (process.arch !== 'x64' && process.arch !== 'arm64') return undefined; // auxv of 8-byte words
  const auxv = readFileSync('/proc/self/auxv');
  const little = endianness() === 'LE';
  for (let at = 0; at + 16 <= auxv.length; at += 16) {
    const type = little ? auxv.readBigUInt64LE(at) : auxv.readBigUInt64BE(at);
    if (type === 0n) break;
    if (type !== AT_PAGESZ) continue;
    const value = Number(little ? auxv.readBigUInt64LE(at + 8) : auxv.readBigUInt64BE(at + 8));
    return value >= 4096 && (value & (value - 1)) === 0 ? value : undefined;
  }
  return undefined;
}

function open(): { fd: number; pageBytes: number } | 'unusable' {
  try {
    const bytes = pageBytes();
    return bytes === undefined ? 'unusable' : { fd: openSync('/proc/self/statm', 'r'), pageBytes: bytes };
  } catch {
    return 'unusable';
  }
}

/** This process' resident set size, bytes (as `process.memoryUsage.rss()`). Never throws. */
export function residentBytes(): number {
  source ??= open();
  if (source !== 'unusable') {
    try {
      const length = readSync(source.fd, buffer, 0, buffer.length, 0);
      const match = STATM.exec(buffer.toString('latin1', 0, length));
      if (match) return Number(match[1]) * source.pageBytes;
    } catch {
      // Not ours any more: below.
    }
    source = 'unusable';
  }
  return process.memoryUsage.rss();
}
