import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, rmdirSync, statSync, truncateSync, unlinkSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { Result } from '../spec/index.js';
import { CliError, UsageError } from './errors.js';
import { fileErrorText } from './file-error.js';
import { MSG } from './messages.js';
import { writeJsonLine } from './json-line-writer.js';
import { RunTally, toResultLine, type ResultLine } from './run-tally.js';

/**
 * The results JSONL file of one run, safe across coordinator restarts.
 *
 * Opening an existing file keeps its complete lines, drops a partial last line (the process
 * died mid-write) and remembers every lease in it, so a re-attached run writes each lease
 * exactly once. Each append first reads what others appended since (a coordinator that took
 * the run over while this one was paused), so the file never holds a lease twice. Lines are written with one synchronous `write` each, before the next result is
 * pulled from the producer (which acknowledges a result only then): a result is in the file
 * before Redis forgets it, and a SIGKILL at any point loses nothing.
 */
export class ResultsFile {
  /** Absolute path. */
  readonly path: string;
  /** Totals over every line in the file, old and new. */
  readonly tally = new RunTally();
  /** Lines found when the file was opened, and whether a partial last line was dropped. */
  readonly reopened: { readonly count: number; readonly droppedPartial: boolean };
  private readonly leases = new Set<string>();
  private fd: number | undefined;
  /** Bytes of the file read into {@link leases} so far (complete lines only). */
  private scanned: number;
  /** Set when {@link open} created the file: the directories it created for it, outermost first. */
  private created: readonly string[] | undefined;

  private constructor(file: string, existing: readonly ResultLine[], droppedPartial: boolean, scanned: number) {
    this.path = file;
    for (const line of existing) this.remember(line);
    this.reopened = { count: existing.length, droppedPartial };
    this.fd = openSync(file, 'a+');
    this.scanned = scanned;
  }

  /**
   * Opens (creating it and its directory if needed) the results file of `runId`.
   * @throws UsageError when the file holds a line that is not a result, or results of another run.
   */
  static open(file: string, runId: string): ResultsFile {
    const absolute = path.resolve(file);
    if (!outFileStats(file, absolute)) {
      const dirs = makeDirs(file, path.dirname(absolute));
      const opened = ResultsFile.create(file, absolute, [], false, 0);
      opened.created = dirs;
      return opened;
    }
    let text: string;
    try {
      text = readFileSync(absolute, 'utf8');
    } catch (err) {
      throw new UsageError(MSG.outNotWritable(file, fileErrorText(err)));
    }
    const end = text.lastIndexOf('\n') + 1;
    const droppedPartial = end < text.length;
    if (droppedPartial) truncateSync(absolute, Buffer.byteLength(text.slice(0, end), 'utf8'));
    const lines = resultLines(file, text.slice(0, end), runId);
    return ResultsFile.create(file, absolute, lines, droppedPartial, Buffer.byteLength(text.slice(0, end), 'utf8'));
  }

  /**
   * How many results of `runId` the file at `file` holds: 0 when it does not exist here, cannot
   * be read or is not a results file. Reads the whole file (once, before a run starts).
   */
  static resultsOf(file: string, runId: string): number {
    let text: string;
    try {
      if (!statSync(file).isFile()) return 0;
      text = readFileSync(file, 'utf8');
    } catch {
      return 0;
    }
    let count = 0;
    for (const raw of text.split('\n')) if (raw.trim() !== '' && parseLine(raw)?.runId === runId) count++;
    return count;
  }

  private static create(file: string, absolute: string, lines: readonly ResultLine[], droppedPartial: boolean, scanned: number): ResultsFile {
    try {
      return new ResultsFile(absolute, lines, droppedPartial, scanned);
    } catch (err) {
      throw new UsageError(MSG.outNotWritable(file, fileErrorText(err)));
    }
  }

  /** Results in the file. */
  get count(): number {
    return this.leases.size;
  }

  /** Whether the lease already has its line. */
  has(leaseId: string): boolean {
    return this.leases.has(leaseId);
  }

  /**
   * Writes the result's line unless its lease is already in the file.
   * @returns true when a line was written.
   */
  append(result: Result): boolean {
    if (this.fd === undefined) throw new Error(`results file ${this.path} is closed`);
    // Checked against the file itself, not only our memory: another coordinator of the run
    // (one that took over while this one was paused) may have appended since.
    this.catchUp(this.fd);
    if (this.leases.has(result.leaseId)) return false;
    const line = toResultLine(result);
    try {
      // A short write to a regular file means the disk is full: as fatal as an error (writeJsonLine throws).
      const sizeBefore = fstatSync(this.fd).size;
      const written = writeJsonLine(this.fd, line);
      // Our own line is not read back by the next catch-up (issue 33: a 60 MiB Result was read
      // and parsed again, three more copies of it in memory), unless another writer's bytes are
      // in between (then the catch-up reads them and ours, as before).
      if (sizeBefore === this.scanned && fstatSync(this.fd).size === sizeBefore + written) this.scanned += written;
    } catch (err) {
      throw new ResultsWriteError(this.path, errorCode(err));
    }
    this.remember(line);
    return true;
  }

  /**
   * Re-reads what others appended since the last look (another coordinator of the run that
   * delivered while this one had lost its lease), so counts and totals cover the whole file.
   */
  refresh(): void {
    if (this.fd !== undefined) this.catchUp(this.fd);
  }

  /**
   * Closes the file and, when {@link open} created it and it is still empty (this coordinator was
   * refused before it delivered anything), removes it and the directories created for it, so a
   * refused command leaves nothing behind. A file someone wrote to meanwhile is kept.
   */
  discardIfUnused(): void {
    const dirs = this.created;
    this.close();
    if (!dirs || this.leases.size > 0) return;
    try {
      if (statSync(this.path).size !== 0) return;
      unlinkSync(this.path);
    } catch {
      return;
    }
    for (const dir of [...dirs].reverse()) {
      try {
        rmdirSync(dir);
      } catch {
        // Someone else put something there meanwhile: leave it.
      }
    }
  }

  /** Closes the file (idempotent). */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /**
   * Reads the complete lines appended by anyone since the last look and remembers their
   * leases (a partial last line of another writer is read once it is complete).
   * @throws ResultsWriteError when the file cannot be read.
   */
  private catchUp(fd: number): void {
    try {
      const size = fstatSync(fd).size;
      if (size <= this.scanned) return;
      const chunk = Buffer.alloc(size - this.scanned);
      const read = readSync(fd, chunk, 0, chunk.length, this.scanned);
      const end = chunk.subarray(0, read).lastIndexOf(0x0a) + 1;
      for (const raw of chunk.subarray(0, end).toString('utf8').split('\n')) {
        const line = raw.trim() === '' ? undefined : parseLine(raw);
        if (line) this.remember(line);
      }
      this.scanned += end;
    } catch (err) {
      throw new ResultsWriteError(this.path, errorCode(err));
    }
  }

  private remember(line: ResultLine): void {
    if (this.leases.has(line.leaseId)) return;
    this.leases.add(line.leaseId);
    this.tally.add(line);
  }
}

/**
 * The Result lines of `text` (complete lines of a results file), each of run `runId`.
 * @throws UsageError naming the file and line of one that is not a Result line, or of another run.
 */
function resultLines(file: string, text: string, runId: string): ResultLine[] {
  const lines: ResultLine[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    const line = parseLine(raw);
    if (!line) throw new UsageError(MSG.resultsCorrupt(file, index + 1));
    if (line.runId !== runId) throw new UsageError(MSG.resultsOtherRun(file, line.runId, runId));
    lines.push(line);
  });
  return lines;
}

/** Writing a result line failed (disk full, file too large, I/O error): the run cannot go on. */
export class ResultsWriteError extends CliError {
  constructor(readonly file: string, readonly code: string) {
    super(`cannot write to results file ${file}: ${code}`);
    this.name = 'ResultsWriteError';
  }
}

/**
 * Checks, before Redis is touched, that `file` can be the results file: a regular file that
 * opens for appending and, given `runId`, holds only Result lines of that run (its complete
 * lines; fresh-user report: `--out` naming the tasks file was refused only after the run id was
 * announced), or a path that does not exist yet in a directory that can be written (missing
 * directories are created on the way and removed again; nothing else is left behind). Never
 * loops: a directory, a device (/dev/full, /dev/stdout), a FIFO, a path under a file or an
 * unwritable directory is refused at once.
 * @throws UsageError naming the path (and line) and the fix.
 */
export function checkOutFile(file: string, runId?: string): void {
  const absolute = path.resolve(file);
  if (outFileStats(file, absolute)) {
    let fd: number;
    try {
      fd = openSync(absolute, 'a');
    } catch (err) {
      throw new UsageError(MSG.outNotWritable(file, fileErrorText(err)));
    }
    closeSync(fd);
    if (runId !== undefined) {
      const text = readFileSync(absolute, 'utf8');
      resultLines(file, text.slice(0, text.lastIndexOf('\n') + 1), runId);
    }
    return;
  }
  const created = makeDirs(file, path.dirname(absolute));
  try {
    let fd: number;
    try {
      fd = openSync(absolute, 'wx');
    } catch (err) {
      throw new UsageError(MSG.outNotWritable(file, fileErrorText(err)));
    }
    closeSync(fd);
    unlinkSync(absolute);
  } finally {
    for (const dir of created.reverse()) {
      try {
        rmdirSync(dir);
      } catch {
        // Someone else put something there meanwhile: leave it.
      }
    }
  }
}

/**
 * The stats of an existing out file, undefined when it does not exist.
 * @throws UsageError when it exists but is not a regular file, or its path runs through a file.
 */
function outFileStats(file: string, absolute: string): Stats | undefined {
  let info: Stats;
  try {
    info = statSync(absolute);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT') return undefined;
    if (code === 'ENOTDIR') throw new UsageError(MSG.outUnderFile(file, nearestExisting(path.dirname(absolute))));
    throw new UsageError(MSG.outNotWritable(file, fileErrorText(err)));
  }
  if (info.isDirectory()) throw new UsageError(MSG.outIsDirectory(file));
  if (!info.isFile()) throw new UsageError(MSG.outNotRegular(file, fileKind(info)));
  return info;
}

/**
 * Creates the missing directories above the out file one level at a time (never `recursive`,
 * which spins forever under /proc on some Node versions).
 * @returns the directories created, outermost first.
 * @throws UsageError when a path component is a file or a directory cannot be created.
 */
function makeDirs(file: string, dir: string): string[] {
  const missing: string[] = [];
  let current = dir;
  for (;;) {
    let info: Stats | undefined;
    try {
      info = statSync(current);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENOTDIR') throw new UsageError(MSG.outUnderFile(file, nearestExisting(current)));
      if (code !== 'ENOENT') throw new UsageError(MSG.outNotWritable(file, fileErrorText(err)));
    }
    if (info) {
      if (!info.isDirectory()) throw new UsageError(MSG.outUnderFile(file, current));
      break;
    }
    missing.unshift(current);
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
  const created: string[] = [];
  for (const each of missing) {
    try {
      mkdirSync(each);
    } catch (err) {
      throw new UsageError(MSG.outNotWritable(file, `${fileErrorText(err)} creating ${each}`));
    }
    created.push(each);
  }
  return created;
}

/** The nearest ancestor of `dir` that exists (the file a path runs through). */
function nearestExisting(dir: string): string {
  for (let current = dir; ; current = path.dirname(current)) {
    try {
      statSync(current);
      return current;
    } catch {
      if (path.dirname(current) === current) return current;
    }
  }
}

function fileKind(info: Stats): string {
  if (info.isCharacterDevice()) return 'character device';
  if (info.isBlockDevice()) return 'block device';
  if (info.isFIFO()) return 'pipe (FIFO)';
  if (info.isSocket()) return 'socket';
  return 'special file';
}

function errorCode(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
}

function parseLine(raw: string): ResultLine | undefined {
  try {
    const value = JSON.parse(raw) as Partial<ResultLine> | null;
    if (!value || typeof value !== 'object' || typeof value.leaseId !== 'string' || typeof value.runId !== 'string') return undefined;
    return value as ResultLine;
  } catch {
    return undefined;
  }
}
