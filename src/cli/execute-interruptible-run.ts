import type { CliEnvironment } from './environment.js';
import { EXIT, type ExitCode } from './errors.js';
import { executeRun, type CoordinatorMetricsAddress, type RunSource } from './execute-run.js';
import { MSG } from './messages.js';
import { checkMetricsPort } from './plane.js';
import { requireRedis } from './redis-preflight.js';
import { checkOutFile } from './results-file.js';
import { recordedResultsFile } from './recorded-results-file.js';
import { defaultOutFile } from './run-id.js';
import { interruptSignal } from './signals.js';

/** Options of {@link executeInterruptibleRun}. */
export interface InterruptibleRunOptions {
  readonly env: CliEnvironment;
  readonly queue: string;
  readonly runId: string;
  /** Results file path; default the run's recorded results file for a resume (see recordedResultsFile), else `defaultOutFile(runId)`. */
  readonly out?: string | undefined;
  readonly source: RunSource;
  /** Print the run id line (a generated id) once Redis answered. */
  readonly announceRunId?: boolean;
  /** `--retain`: retention of the delivered run, ms (default: the producer's). */
  readonly retainMs?: number;
  /** `run --cost-ceiling-usd`: producer option costCeilingUsd. */
  readonly costCeilingUsd?: number;
  /** Serve coordinator metrics here while the run lasts (`--metrics-port`, `--metrics-host`). */
  readonly metrics?: CoordinatorMetricsAddress;
}

/** `{ metrics }` for {@link executeInterruptibleRun} when `--metrics-port` was given, else `{}`. */
export function metricsOf(options: { metricsPort?: number; metricsHost?: string }): { metrics?: CoordinatorMetricsAddress } {
  return options.metricsPort === undefined ? {} : { metrics: { port: options.metricsPort, host: options.metricsHost ?? '127.0.0.1' } };
}

/**
 * The shared tail of `run` and `resume`: refuse early when the results file cannot be written
 * (`checkOutFile`, a usage error) or Redis does not answer (`requireRedis`), then {@link executeRun} with the first Ctrl-C (SIGINT/SIGTERM) aborting
 * its `interrupt` signal and a second one exiting with `EXIT.interrupted` at once. The signal
 * handlers are removed when the run ends, however it ends.
 * @returns executeRun's exit code.
 * @throws what checkOutFile, requireRedis and executeRun throw (UsageError for a bad --out,
 *   CliError for an unreachable Redis or an unknown run).
 */
export async function executeInterruptibleRun(options: InterruptibleRunOptions): Promise<ExitCode> {
  const { env, runId } = options;
  // A resume without --out collects into the run's own results file, which needs Redis first.
  const resumeAnywhere = options.source.kind === 'attach' && options.out === undefined;
  if (resumeAnywhere) await requireRedis(env);
  const out = options.out ?? (resumeAnywhere ? await recordedResultsFile(env, options.queue, runId) : undefined) ?? defaultOutFile(runId);
  checkOutFile(out, runId);
  if (options.metrics) await checkMetricsPort(options.metrics);
  if (!resumeAnywhere) await requireRedis(env);
  if (options.announceRunId) process.stderr.write(`${MSG.runIdGenerated(runId)}\n`);
  const interrupt = interruptSignal(EXIT.interrupted, { first: MSG.runStopping, forced: MSG.runForcedOut(runId, out, options.queue) });
  try {
    return await executeRun({
      env,
      queue: options.queue,
      runId,
      out,
      source: options.source,
      interrupt: interrupt.signal,
      ...(options.retainMs !== undefined ? { retainMs: options.retainMs } : {}),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.costCeilingUsd !== undefined ? { costCeilingUsd: options.costCeilingUsd } : {}),
    });
  } finally {
    interrupt.dispose();
  }
}
