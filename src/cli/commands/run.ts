import { Command, Option } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { documentDefault } from '../option-help.js';
import { DEFAULT_HANG_MS, DEFAULT_MEMORY_MB, DEFAULT_REWARD_MS, DEFAULT_RUN_MS, MIN_MEMORY_MB } from '../../spec/index.js';
import { cpusOf, durationMs, envNameList, goldKeyList, hostOf, integerAtLeast, integerBetween, labelPair, portOf, positiveInteger, positiveUsd, runIdOf, runWeight } from '../option-parsers.js';
import { DEFAULT_MAX_SPEC_BYTES, DEFAULT_RUN_WEIGHT, MAX_PRODUCER_BYTES } from '../../producer/index.js';

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
    .option('--reward-file <path...>', HELP.run.rewardFile)
    .addOption(documentDefault(new Option('--run-id <id>', HELP.run.runId), 'generated').argParser(runIdOf('--run-id')))
    .addOption(documentDefault(new Option('--out <file>', HELP.run.out), 'results-<runId>.jsonl'))
    .addOption(queueOption())
    .addOption(documentDefault(new Option('--max-in-flight <n>', HELP.run.maxInFlight), 500).argParser(positiveInteger))
    .addOption(documentDefault(new Option('--weight <n>', HELP.run.weight), DEFAULT_RUN_WEIGHT).argParser(runWeight))
    .addOption(documentDefault(new Option('--max-spec-bytes <bytes>', HELP.run.maxSpecBytes), DEFAULT_MAX_SPEC_BYTES).argParser(integerBetween(1024, MAX_PRODUCER_BYTES)))
    .addOption(new Option('--env <name...>', HELP.run.env).argParser(envNameList))
    .addOption(documentDefault(new Option('--run-ms <ms>', HELP.run.runMs), DEFAULT_RUN_MS).argParser(positiveInteger))
    .addOption(documentDefault(new Option('--reward-ms <ms>', HELP.run.rewardMs), DEFAULT_REWARD_MS).argParser(positiveInteger))
    .addOption(documentDefault(new Option('--hang-ms <ms>', HELP.run.hangMs), DEFAULT_HANG_MS).argParser(positiveInteger))
    .addOption(documentDefault(new Option('--memory-mb <mib>', HELP.run.memoryMb), DEFAULT_MEMORY_MB).argParser(integerAtLeast(MIN_MEMORY_MB)))
    .addOption(documentDefault(new Option('--retain <duration>', HELP.run.retain), '3d').argParser(durationMs))
    .addOption(documentDefault(new Option('--cpus <n>', HELP.run.cpus), 1).argParser(cpusOf))
    .addOption(documentDefault(new Option('--disk-mb <mib>', HELP.run.diskMb), 512).argParser(integerBetween(1, 65_536)))
    .addOption(documentDefault(new Option('--network <mode>', HELP.run.network), 'none').choices(['none', 'host']))
    .addOption(new Option('--placement <label>', HELP.run.placement).argParser(labelPair))
    .option('--fingerprint <value>', HELP.run.fingerprint)
    .addOption(documentDefault(new Option('--class <class>', HELP.run.class), 'rollout').choices(['rollout', 'evaluation']))
    .addOption(new Option('--cost-ceiling-usd <usd>', HELP.run.costCeilingUsd).argParser(positiveUsd))
    .addOption(new Option('--gold-key <key...>', HELP.run.goldKey).argParser(goldKeyList))
    .option('--gold-visible-to-run', HELP.run.goldVisibleToRun)
    .option('--allow-eviction', HELP.allowEviction)
    .addOption(new Option('--metrics-port <port>', HELP.run.metricsPort).argParser(portOf('--metrics-port', 9465)))
    .addOption(documentDefault(new Option('--metrics-host <host>', HELP.run.metricsHost), '127.0.0.1').argParser(hostOf('--metrics-host')));
}

/** Parsed options of `run`, inferred (by extra-typings) from the flags runCommand declares. */
export type RunCommandOptions = ReturnType<ReturnType<typeof runCommand>['opts']>;
