import { queueKeys, readRunRecord } from '../lease/index.js';
import type { CliEnvironment } from './environment.js';
import { lookOnce } from './queue-usage.js';

/**
 * The results file a run's CLI coordinator recorded (`run.coordinatorNote`, an absolute path),
 * or undefined when there is no such run or it recorded none (a run of the library): what
 * `resume` without `--out` collects into, wherever it is started (fresh-user report: from another
 * directory, `results-<runId>.jsonl` there was refused as not the run's file).
 */
export async function recordedResultsFile(env: CliEnvironment, queue: string, runId: string): Promise<string | undefined> {
  const run = await lookOnce(env, (redis) => readRunRecord(redis, queueKeys(env.prefix, queue), runId));
  return run?.coordinatorNote ?? undefined;
}
