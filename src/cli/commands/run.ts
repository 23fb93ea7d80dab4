import { Command, Option } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { MIN_MEMORY_MB } from '../../spec/index.js';
import { durationMs, envNameList, goldKeyList, hostOf, integerAtLeast, integerBetween, labelPair, portOf, positiveInteger, positiveUsd, runIdOf } from '../option-parsers.js';
import { MAX_PRODUCER_BYTES } from '../../producer/index.js';

/**
 * `rollout-queue run`: one rollout per task line, results to `--out`, a summary. Running it
 * again with the same `--run-id` re-attaches (nothing is enqueued twice, the results file ends
 * with every lease once). The action is attached (and loaded when the command runs) in
 * `command-actions.ts`.
 */
export function runCommand() {
  return new Command('run')
    .description(HELP.run.description)
    .requiredOption('--tasks <file>', HELP.run.tasks)
    .requiredOption('--artifact <path>', HELP.run.artifact)
    .requiredOption('--run <target>', HELP.run.run)
    .option('--run-config <json>', HELP.run.runConfig)
    .requiredOption('--reward <target>', HELP.run.reward)
    .option('--reward-config <json>', HELP.run.rewardConfig)
    .addOption(new Option('--run-id <id>', HELP.run.runId).argParser(runIdOf('--run-id')))
    .option('--out <file>', HELP.run.out)
    .addOption(queueOption())
    .addOption(new Option('--max-in-flight <n>', HELP.run.maxInFlight).argParser(positiveInteger))
    .addOption(new Option('--max-spec-bytes <bytes>', HELP.run.maxSpecBytes).argParser(integerBetween(1024, MAX_PRODUCER_BYTES)))
    .addOption(new Option('--env <name...>', HELP.run.env).argParser(envNameList))
    .addOption(new Option('--run-ms <ms>', HELP.run.runMs).argParser(positiveInteger))
    .addOption(new Option('--reward-ms <ms>', HELP.run.rewardMs).argParser(positiveInteger))
    .addOption(new Option('--hang-ms <ms>', HELP.run.hangMs).argParser(positiveInteger))
    .addOption(new Option('--memory-mb <mib>', HELP.run.memoryMb).argParser(integerAtLeast(MIN_MEMORY_MB)))
    .addOption(new Option('--retain <duration>', HELP.run.retain).argParser(durationMs))
    .addOption(new Option('--placement <label>', HELP.run.placement).argParser(labelPair))
    .option('--fingerprint <value>', HELP.run.fingerprint)
    .addOption(new Option('--class <class>', HELP.run.class).choices(['rollout', 'evaluation']))
    .addOption(new Option('--cost-ceiling-usd <usd>', HELP.run.costCeilingUsd).argParser(positiveUsd))
    .addOption(new Option('--gold-key <key...>', HELP.run.goldKey).argParser(goldKeyList))
    .option('--gold-visible-to-run', HELP.run.goldVisibleToRun)
    .option('--allow-eviction', HELP.allowEviction)
    .addOption(new Option('--metrics-port <port>', HELP.run.metricsPort).argParser(portOf('--metrics-port', 9465)))
    .addOption(new Option('--metrics-host <host>', HELP.run.metricsHost).argParser(hostOf('--metrics-host')));
}

/** Parsed options of `run`, inferred (by extra-typings) from the flags runCommand declares. */
export type RunCommandOptions = ReturnType<ReturnType<typeof runCommand>['opts']>;
