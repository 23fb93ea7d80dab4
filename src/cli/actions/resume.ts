import { cliEnvironment } from '../environment.js';
import type { ExitCode } from '../errors.js';
import { executeInterruptibleRun, metricsOf } from '../execute-interruptible-run.js';
import type { ResumeCommandOptions } from '../commands/resume.js';

/**
 * `rollout-queue resume RUN_ID`: attach to a run whose coordinator is gone, write every result
 * not yet in the results file, print the summary of the whole run.
 */
export async function resumeAction(runId: string, options: ResumeCommandOptions): Promise<ExitCode> {
  return executeInterruptibleRun({ env: cliEnvironment(), queue: options.queue, runId, out: options.out, source: { kind: 'attach' }, ...(options.retain !== undefined ? { retainMs: options.retain } : {}), ...metricsOf(options) });
}
