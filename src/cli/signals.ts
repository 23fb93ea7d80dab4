/** The signals that ask the CLI to stop. */
const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

/**
 * Calls `first` on the first SIGINT/SIGTERM and `second` on any later one (a user pressing
 * Ctrl-C twice wants out now). Installing the handlers keeps Node from exiting on the signal.
 * @returns a function that removes the handlers.
 */
export function onStopSignals(first: (signal: NodeJS.Signals) => void, second: (signal: NodeJS.Signals) => void): () => void {
  let seen = 0;
  const handler = (signal: NodeJS.Signals): void => {
    seen += 1;
    if (seen === 1) first(signal);
    else second(signal);
  };
  for (const signal of SIGNALS) process.on(signal, handler);
  return () => {
    for (const signal of SIGNALS) process.off(signal, handler);
  };
}

/**
 * An AbortSignal aborted by the first SIGINT/SIGTERM (after writing `notes.first` to stderr); a
 * second one writes `notes.forced` and exits with `exitCode` at once, so a user who pressed
 * Ctrl-C twice is still told how to go on.
 */
export function interruptSignal(exitCode: number, notes: { readonly first?: string; readonly forced?: string } = {}): { readonly signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const dispose = onStopSignals(
    (signal) => {
      if (notes.first) process.stderr.write(`${notes.first}\n`);
      controller.abort(signal);
    },
    () => {
      if (notes.forced) process.stderr.write(`${notes.forced}\n`);
      process.exit(exitCode);
    },
  );
  return { signal: controller.signal, dispose };
}

/** Resolves on the first SIGINT/SIGTERM (for services that run until stopped). */
export function untilStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const dispose = onStopSignals(
      (signal) => {
        dispose();
        resolve(signal);
      },
      () => {},
    );
  });
}
