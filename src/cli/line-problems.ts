import { UsageError } from './errors.js';
import { MSG } from './messages.js';

/** Bad lines shown at most in one report; the rest are counted. */
export const MAX_LINE_PROBLEMS = 20;

/**
 * The bad lines of one tasks file, gathered by every check (reading, gold answers, spec fields)
 * and reported together before anything is enqueued (issue 31: a tasks file with three bad lines
 * needed three runs to find them). One problem a line: the first check that refuses a line
 * names it, later checks skip it ({@link has}).
 */
export class LineProblems {
  private readonly byLine = new Map<number, string>();

  /** @param file the tasks file as named in messages. */
  constructor(readonly file: string) {}

  /**
   * Records the problem of `line` (its message as `MSG.task*` write it: `file:line: …`), unless
   * that line has one already.
   */
  add(line: number, message: string): void {
    if (!this.byLine.has(line)) this.byLine.set(line, message);
  }

  /** Whether `line` has a problem already. */
  has(line: number): boolean {
    return this.byLine.has(line);
  }

  /** Lines with a problem. */
  get size(): number {
    return this.byLine.size;
  }

  /**
   * Throws the report when any line has a problem: one problem's own message as it is, or every
   * bad line in file order, the first {@link MAX_LINE_PROBLEMS} shown and the rest counted.
   * @throws UsageError (exit 2).
   */
  throwIfAny(): void {
    if (this.byLine.size === 0) return;
    const sorted = [...this.byLine.entries()].sort(([a], [b]) => a - b).map(([, message]) => message);
    if (sorted.length === 1) throw new UsageError(sorted[0] as string);
    throw new UsageError(MSG.taskLinesRefused(this.file, sorted.length, sorted.slice(0, MAX_LINE_PROBLEMS)));
  }
}
