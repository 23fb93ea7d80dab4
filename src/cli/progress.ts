import cliProgress from 'cli-progress';
import { MSG } from './messages.js';

/** Shows how many results of a run are in. */
export interface Progress {
  /** Sets the number of results done. */
  update(done: number): void;
  /** Ends the display (idempotent); call before printing anything else. */
  stop(): void;
}

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  /** Expected results, or null when unknown. */
  readonly total: number | null;
  /** Results already done (a re-attached run). */
  readonly initial: number;
  /** Where to draw (default stderr). */
  readonly stream?: NodeJS.WriteStream;
}

/**
 * A progress display on stderr: a cli-progress bar when stderr is a terminal, otherwise one
 * plain line each time another ~10% is done (or every 10 results when the total is unknown),
 * so logs of CI runs stay short.
 */
export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  return stream.isTTY && options.total !== null ? barProgress(stream, options.total, options.initial) : lineProgress(stream, options);
}

function barProgress(stream: NodeJS.WriteStream, total: number, initial: number): Progress {
  const bar = new cliProgress.SingleBar(
    { stream, format: ' {bar} {percentage}% | {value}/{total} results | {duration_formatted}', hideCursor: true, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, initial);
  let stopped = false;
  return {
    update: (done) => bar.update(done),
    stop: () => {
      if (!stopped) bar.stop();
      stopped = true;
    },
  };
}

function lineProgress(stream: NodeJS.WriteStream, { total, initial }: ProgressOptions): Progress {
  const step = total === null ? 10 : Math.max(1, Math.ceil(total / 10));
  let nextAt = (Math.floor(initial / step) + 1) * step;
  // The count shown last: the final count came twice on a resume of a delivered run (fresh-user report).
  let shown: number | undefined;
  return {
    update(done) {
      if ((done < nextAt && done !== total) || done === shown) return;
      shown = done;
      stream.write(`${MSG.progressLine(done, total)}\n`);
      nextAt = (Math.floor(done / step) + 1) * step;
    },
    stop() {},
  };
}
