/**
 * What asks the CLI to stop: a signal, or `EPIPE` when its output went nowhere (the reader of
 * stdout or stderr went away, as `| head` does, or the terminal closed).
 */
export type StopReason = NodeJS.Signals | 'EPIPE';

/**
 * The signals that ask the CLI to stop: SIGINT (Ctrl-C), SIGTERM, and SIGHUP (its terminal
 * closed: by default that killed the CLI on the spot, so a demo left its workers and its
 * redis-server running). Node resets every signal to its default at start (src/node.cc
 * `PlatformInit`; SIGPIPE and SIGXFSZ excepted), so `nohup` never kept a node process alive
 * through a hang-up: run a worker that must outlive its terminal under a service manager.
 */
const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** The handlers of every live {@link onStopSignals} call. */
const handlers = new Set<(reason: StopReason) => void>();
let outputWatched = false;
let outputLost = false;

/**
 * The first error writing stdout or stderr is one stop request (`EPIPE`), however many streams
 * report it; later ones are dropped. Without a listener the error was thrown, so the CLI died
 * without stopping what it had started. Installed once and kept: output written after the
 * handlers are gone (a summary) must not throw either.
 */
function watchOutput(): void {
  if (outputWatched) return;
  outputWatched = true;
  const lost = (): void => {
    if (outputLost) return;
    outputLost = true;
    for (const handler of [...handlers]) handler('EPIPE');
  };
  process.stdout.on('error', lost);
  process.stderr.on('error', lost);
}

/**
 * Calls `first` on the first stop request (a signal of {@link SIGNALS}, or lost output) and
 * `second` on any later one (a user pressing Ctrl-C twice wants out now). Installing the
 * handlers keeps Node from exiting on the signal.
 * @returns a function that removes the handlers.
 */
export function onStopSignals(first: (reason: StopReason) => void, second: (reason: StopReason) => void): () => void {
  let seen = 0;
  const handler = (reason: StopReason): void => {
    seen += 1;
    if (seen === 1) first(reason);
    else second(reason);
  };
  watchOutput();
  handlers.add(handler);
  for (const signal of SIGNALS) process.on(signal, handler);
  return () => {
    handlers.delete(handler);
    for (const signal of SIGNALS) process.off(signal, handler);
  };
}

/**
 * An AbortSignal aborted by the first stop request (after writing `notes.first` to stderr); a
 * second one writes `notes.forced` and exits with `exitCode` at once, so a user who pressed
 * Ctrl-C twice is still told how to go on.
 */
export function interruptSignal(exitCode: number, notes: { readonly first?: string; readonly forced?: string } = {}): { readonly signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const dispose = onStopSignals(
    (reason) => {
      if (notes.first) process.stderr.write(`${notes.first}\n`);
      controller.abort(reason);
    },
    () => {
      if (notes.forced) process.stderr.write(`${notes.forced}\n`);
      process.exit(exitCode);
    },
  );
  return { signal: controller.signal, dispose };
}

/** Resolves on the first stop request (for services that run until stopped). */
export function untilStopSignal(): Promise<StopReason> {
  return new Promise((resolve) => {
    const dispose = onStopSignals(
      (reason) => {
        dispose();
        resolve(reason);
      },
      () => {},
    );
  });
}
