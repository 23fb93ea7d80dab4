import type { CliEnvironment } from './environment.js';
import { EXIT, type ExitCode } from './errors.js';
import { executeRun, type RunSource } from './execute-run.js';
import { requireRedis } from './redis-preflight.js';
import { defaultOutFile } from './run-id.js';
import { interruptSignal } from './signals.js';

/** Options of {@link executeInterruptibleRun}. */
export interface InterruptibleRunOptions {
  readonly env: CliEnvironment;
  readonly queue: string;
  readonly runId: string;
  /** Results file path; default `defaultOutFile(runId)`. */
  readonly out?: string | undefined;
  readonly source: RunSource;
}

/**
 * The shared tail of `run` and `resume`: refuse early when Redis does not answer
 * (`requireRedis`), then {@link executeRun} with the first Ctrl-C (SIGINT/SIGTERM) aborting
 * its `interrupt` signal and a second one exiting with `EXIT.interrupted` at once. The signal
 * handlers are removed when the run ends, however it ends.
 * @returns executeRun's exit code.
 * @throws what requireRedis and executeRun throw (CliError for an unreachable Redis or an unknown run).
 */
export async function executeInterruptibleRun(options: InterruptibleRunOptions): Promise<ExitCode> {
  const { env, runId } = options;
  await requireRedis(env);
  const interrupt = interruptSignal(EXIT.interrupted);
  try {
    return await executeRun({
      env,
      queue: options.queue,
      runId,
      out: options.out ?? defaultOutFile(runId),
      source: options.source,
      interrupt: interrupt.signal,
    });
  } finally {
    interrupt.dispose();
  }
}
