import { loadArtifact } from '../artifact.js';
import { refuseArtifactLeaks } from '../artifact-leaks.js';
import { buildDrafts, buildRef, checkBuiltinRewardConfig, checkBuiltinRun, parseConfigOption, withDefaultEntrypoint } from '../build-drafts.js';
import { checkDrafts, checkSpecBytes, specsFingerprint } from '../check-drafts.js';
import { checkBuiltinRewardGold } from '../check-gold.js';
import { cliEnvironment } from '../environment.js';
import type { ExitCode } from '../errors.js';
import { MSG } from '../messages.js';
import { executeInterruptibleRun, metricsOf } from '../execute-interruptible-run.js';
import { defaultOutFile, generateRunId } from '../run-id.js';
import { LineProblems } from '../line-problems.js';
import { readTasksFile } from '../tasks-file.js';
import { DEFAULT_MEMORY_MB } from '../../spec/index.js';
import { DEFAULT_MAX_SPEC_BYTES } from '../../producer/index.js';
import { refuseEvictingRedis } from '../redis-preflight.js';
import { refuseUnshippedJudgeFiles, withRewardFiles } from '../reward-files.js';
import type { RunCommandOptions } from '../commands/run.js';

/**
 * `rollout-queue run`: every input is checked before Redis is touched, so a usage error
 * (exit 2) never enqueues anything; then the shared run path (progress, results file, summary).
 */
export async function runAction(options: RunCommandOptions): Promise<ExitCode> {
  const env = cliEnvironment();
  // Every bad task line, of every check below, is reported in one go before anything is enqueued.
  const problems = new LineProblems(options.tasks);
  const tasks = await readTasksFile(options.tasks, { problems });
  const artifact = await loadArtifact(options.artifact);
  const run = withDefaultEntrypoint(buildRef('--run', options.run, parseConfigOption('--run-config', options.runConfig)), artifact.entrypoint);
  checkBuiltinRun(run, artifact.rendered, options.memoryMb ?? DEFAULT_MEMORY_MB);
  const rewardConfig = await withRewardFiles(options.reward, parseConfigOption('--reward-config', options.rewardConfig), options.rewardFile);
  const reward = buildRef('--reward', options.reward, rewardConfig);
  checkBuiltinRewardConfig(reward);
  refuseUnshippedJudgeFiles(options.reward, rewardConfig);
  checkBuiltinRewardGold(options.tasks, tasks, reward, problems);
  const drafts = buildDrafts(tasks, {
    rendered: artifact.rendered,
    run,
    reward,
    ...(options.env ? { env: options.env } : {}),
    ...(options.runMs !== undefined ? { runMs: options.runMs } : {}),
    ...(options.rewardMs !== undefined ? { rewardMs: options.rewardMs } : {}),
    ...(options.hangMs !== undefined ? { hangMs: options.hangMs } : {}),
    ...(options.memoryMb !== undefined ? { memoryMb: options.memoryMb } : {}),
    ...(options.cpus !== undefined ? { cpus: options.cpus } : {}),
    ...(options.diskMb !== undefined ? { diskMb: options.diskMb } : {}),
    ...(options.network !== undefined ? { network: options.network as 'none' | 'host' } : {}),
    ...(options.placement ? { placement: options.placement } : {}),
    ...(options.fingerprint !== undefined ? { fingerprint: options.fingerprint } : {}),
    ...(options.class !== undefined ? { class: options.class } : {}),
    ...(options.goldKey !== undefined ? { goldKeys: options.goldKey } : {}),
    ...(options.goldVisibleToRun === true ? { goldVisibleToRun: true } : {}),
  });
  // Said before the run, not only on each Result: the run's rewards then measure nothing for a model-written program.
  if (options.goldVisibleToRun === true) process.stderr.write(`${MSG.goldVisibleWarning}\n`);
  const specs = checkDrafts(options.tasks, tasks, drafts, problems);
  problems.throwIfAny();
  const runId = options.runId ?? generateRunId();
  // The program must not be able to read the gold (fresh-user report: tasks.jsonl inside --artifact my-run/).
  refuseArtifactLeaks({
    artifactPath: options.artifact,
    rendered: artifact.rendered,
    tasksFile: options.tasks,
    tasks,
    outFile: options.out ?? defaultOutFile(runId),
    reward,
    ...(options.goldKey !== undefined ? { goldKeys: options.goldKey } : {}),
  });
  checkSpecBytes(options.tasks, tasks, drafts, specs, runId, options.maxSpecBytes ?? DEFAULT_MAX_SPEC_BYTES);
  const fingerprint = specsFingerprint(drafts, specs);
  await refuseEvictingRedis(env, options.allowEviction === true);
  return executeInterruptibleRun({
    env,
    queue: options.queue,
    runId,
    out: options.out,
    announceRunId: !options.runId,
    ...(options.retain !== undefined ? { retainMs: options.retain } : {}),
    ...metricsOf(options),
    ...(options.costCeilingUsd !== undefined ? { costCeilingUsd: options.costCeilingUsd } : {}),
    source: {
      kind: 'map',
      drafts,
      fingerprint,
      ...(options.maxInFlight !== undefined ? { maxInFlight: options.maxInFlight } : {}),
      ...(options.maxSpecBytes !== undefined ? { maxSpecBytes: options.maxSpecBytes } : {}),
      ...(options.weight !== undefined ? { weight: options.weight } : {}),
    },
  });
}
