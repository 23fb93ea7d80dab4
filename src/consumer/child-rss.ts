import { openSync, readFileSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

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

/** Longest time an RSS reported after a rollout may rest on an earlier read of statm, ms. */
export const RSS_READ_INTERVAL_MS = 100;
/** Growth of V8's memory since the last read of statm that makes the next report read it again, bytes. */
export const RSS_READ_GROWTH_BYTES = 16 * 1024 * 1024;

/** The last read of statm: when (performance.now() ms), its RSS and V8's memory then, bytes. */
let lastRead: { readonly at: number; readonly rss: number; readonly v8: number } | undefined;

/** The heap in use at the last {@link rolloutResidentBytes}, bytes. */
let lastHeapUsedBytes = 0;

/** Memory V8 knows of: its heap's physical pages, ArrayBuffer and Buffer stores, its own mallocs; bytes. */
function v8Bytes(): number {
  const heap = getHeapStatistics();
  lastHeapUsedBytes = heap.used_heap_size;
  return heap.total_physical_size + heap.external_memory + heap.malloced_memory;
}

/**
 * Share of the heap limit (`--max-old-space-size`, the spec's `sandbox.memoryMb`) past which a child
 * drains after a rollout: its rollouts share one heap, and an out-of-memory there ends every one of
 * them (each then retried alone). Used heap includes garbage not yet collected, but V8 collects well
 * before its use nears the hard limit, so three quarters of it in use is live data near the limit.
 */
export const HEAP_DRAIN_FRACTION = 0.75;

/**
 * True when, at the last {@link rolloutResidentBytes}, the heap in use was past
 * {@link HEAP_DRAIN_FRACTION} of `memoryMb` MiB (the child's old-space limit; V8's own
 * `heap_size_limit` adds the young generation to it).
 */
export function heapNearLimit(memoryMb: number): boolean {
  return lastHeapUsedBytes > HEAP_DRAIN_FRACTION * memoryMb * 1024 * 1024;
}

/**
 * This process' RSS after a rollout, bytes, for the worker's `maxChildRssMb` check, read from
 * statm at most every {@link RSS_READ_INTERVAL_MS} unless V8's own memory grew by
 * {@link RSS_READ_GROWTH_BYTES} or more since the last read. Between reads it is the last RSS
 * plus V8's growth since. Why not every rollout: that read of /proc was measured at ~0.1 ms of a
 * rollout child's CPU per no-op rollout on the bench machine (a quarter of it); what a rollout
 * allocates on V8's heap or in Buffers shows in the growth at once, and native memory that V8
 * does not see (an addon's) is read within the interval. Never throws.
 * @param now performance.now() (ms), given by tests.
 */
export function rolloutResidentBytes(now: number = performance.now()): number {
  const v8 = v8Bytes();
  if (lastRead && now - lastRead.at < RSS_READ_INTERVAL_MS && v8 - lastRead.v8 < RSS_READ_GROWTH_BYTES) {
    return lastRead.rss + Math.max(0, v8 - lastRead.v8);
  }
  const rss = residentBytes();
  lastRead = { at: now, rss, v8 };
  return rss;
}
