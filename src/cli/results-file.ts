import { closeSync, existsSync, mkdirSync, openSync, readFileSync, truncateSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Result } from '../spec/index.js';
import { UsageError } from './errors.js';
import { MSG } from './messages.js';
import { RunTally, toResultLine, type ResultLine } from './run-tally.js';

/**
 * The results JSONL file of one run, safe across coordinator restarts.
 *
 * Opening an existing file keeps its complete lines, drops a partial last line (the process
 * died mid-write) and remembers every lease in it, so a re-attached run writes each lease
 * exactly once. Lines are written with one synchronous `write` each, before the next result is
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

  private constructor(file: string, existing: readonly ResultLine[], droppedPartial: boolean) {
    this.path = file;
    for (const line of existing) this.remember(line);
    this.reopened = { count: existing.length, droppedPartial };
    this.fd = openSync(file, 'a');
  }

  /**
   * Opens (creating it and its directory if needed) the results file of `runId`.
   * @throws UsageError when the file holds a line that is not a result, or results of another run.
   */
  static open(file: string, runId: string): ResultsFile {
    const absolute = path.resolve(file);
    mkdirSync(path.dirname(absolute), { recursive: true });
    if (!existsSync(absolute)) return new ResultsFile(absolute, [], false);
    const text = readFileSync(absolute, 'utf8');
    const end = text.lastIndexOf('\n') + 1;
    const droppedPartial = end < text.length;
    if (droppedPartial) truncateSync(absolute, Buffer.byteLength(text.slice(0, end), 'utf8'));
    const lines: ResultLine[] = [];
    text.slice(0, end).split('\n').forEach((raw, index) => {
      if (raw.trim() === '') return;
      const line = parseLine(raw);
      if (!line) throw new UsageError(MSG.resultsCorrupt(file, index + 1));
      if (line.runId !== runId) throw new UsageError(MSG.resultsOtherRun(file, line.runId, runId));
      lines.push(line);
    });
    return new ResultsFile(absolute, lines, droppedPartial);
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
    if (this.leases.has(result.leaseId)) return false;
    if (this.fd === undefined) throw new Error(`results file ${this.path} is closed`);
    const line = toResultLine(result);
    writeSync(this.fd, `${JSON.stringify(line)}\n`);
    this.remember(line);
    return true;
  }

  /** Closes the file (idempotent). */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private remember(line: ResultLine): void {
    if (this.leases.has(line.leaseId)) return;
    this.leases.add(line.leaseId);
    this.tally.add(line);
  }
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
