import { cliEnvironment } from '../environment.js';
import { EXIT, type ExitCode } from '../errors.js';
import { executeRun } from '../execute-run.js';
import { requireRedis } from '../redis-preflight.js';
import { defaultOutFile } from '../run-id.js';
import { interruptSignal } from '../signals.js';

/** Parsed options of `resume`. */
export interface ResumeOptions {
  out?: string;
  queue: string;
}

/**
 * `rollout-queue resume RUN_ID`: attach to a run whose coordinator is gone, write every result
 * not yet in the results file, print the summary of the whole run.
 */
export async function resumeAction(runId: string, options: ResumeOptions): Promise<ExitCode> {
  const env = cliEnvironment();
  await requireRedis(env);
  const interrupt = interruptSignal(EXIT.interrupted);
  try {
    return await executeRun({
      env,
      queue: options.queue,
      runId,
      out: options.out ?? defaultOutFile(runId),
      source: { kind: 'attach' },
      interrupt: interrupt.signal,
    });
  } finally {
    interrupt.dispose();
  }
}
