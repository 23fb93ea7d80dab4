import cliProgress from 'cli-progress';
import type { ResultKind } from '../spec/index.js';
import { MSG } from './messages.js';

/** How far a run is: results in, and how many of each kind. */
export interface ProgressCounts {
  /** Results done (in the results file). */
  readonly done: number;
  /** Results by kind, of those done. */
  readonly kinds: Readonly<Record<ResultKind, number>>;
}

/** Shows how many results of a run are in. */
export interface Progress {
  /** Sets the results done and their kinds. */
  update(counts: ProgressCounts): void;
  /** Ends the display (idempotent); call before printing anything else. */
  stop(): void;
}

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  /** Expected results, or null when unknown. */
  readonly total: number | null;
  /** Results already done (a re-attached run): the rate and ETA count only what comes after. */
  readonly initial: number;
  /** Where to draw (default stderr). */
  readonly stream?: NodeJS.WriteStream;
  /** The clock, ms (default `Date.now`; a test passes its own). */
  readonly now?: () => number;
}

/** Rate and ETA of a run so far: results per second since the display started, and the time left at that rate. */
export interface ProgressPace {
  /** Results per second since the start (of this process' results only), or null before the first. */
  readonly perSecond: number | null;
  /** Seconds left at that rate, or null when unknown (no rate, or no total). */
  readonly etaSeconds: number | null;
}

/** The pace of `done` results out of `total`, `initial` of them there before `startMs`. */
export function paceOf(done: number, total: number | null, initial: number, startMs: number, nowMs: number): ProgressPace {
  const fresh = done - initial;
  const seconds = (nowMs - startMs) / 1000;
  const perSecond = fresh > 0 && seconds > 0 ? fresh / seconds : null;
  const etaSeconds = perSecond !== null && total !== null ? Math.max(0, total - done) / perSecond : null;
  return { perSecond, etaSeconds };
}

/**
 * A progress display on stderr. On a terminal, a cli-progress bar redrawn in place: done/total,
 * percentage, rate, ETA and the counts by kind. Anywhere else (a pipe, a CI log), one plain line
 * each time another ~10% is done (or every 10 results when the total is unknown) with the same
 * facts, so logs of CI runs stay short.
 */
export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  return stream.isTTY && options.total !== null ? barProgress(stream, options.total, options) : lineProgress(stream, options);
}

const NO_KINDS: Readonly<Record<ResultKind, number>> = { ok: 0, model: 0, infrastructure: 0, caller: 0 };

function barProgress(stream: NodeJS.WriteStream, total: number, { initial, now = Date.now }: ProgressOptions): Progress {
  const startMs = now();
  const bar = new cliProgress.SingleBar(
    { stream, format: MSG.progressBarFormat, hideCursor: true, clearOnComplete: false, barsize: 24 },
    cliProgress.Presets.shades_classic,
  );
  const payload = (done: number, kinds: Readonly<Record<ResultKind, number>>) => {
    const pace = paceOf(done, total, initial, startMs, now());
    // Not `eta`: cli-progress fills its own {eta} over the payload's.
    return { rate: MSG.progressRate(pace.perSecond), etaLeft: MSG.progressEta(pace.etaSeconds), kinds: MSG.progressKinds(kinds) };
  };
  bar.start(total, initial, payload(initial, NO_KINDS));
  let stopped = false;
  return {
    update: ({ done, kinds }) => bar.update(done, payload(done, kinds)),
    stop: () => {
      if (!stopped) bar.stop();
      stopped = true;
    },
  };
}

function lineProgress(stream: NodeJS.WriteStream, { total, initial, now = Date.now }: ProgressOptions): Progress {
  const startMs = now();
  const step = total === null ? 10 : Math.max(1, Math.ceil(total / 10));
  let nextAt = (Math.floor(initial / step) + 1) * step;
  // The count shown last: the final count came twice on a resume of a delivered run (fresh-user report).
  let shown: number | undefined;
  return {
    update({ done, kinds }) {
      if ((done < nextAt && done !== total) || done === shown) return;
      shown = done;
      stream.write(`${MSG.progressLine(done, total, paceOf(done, total, initial, startMs, now()), kinds)}\n`);
      nextAt = (Math.floor(done / step) + 1) * step;
    },
    stop() {},
  };
}
