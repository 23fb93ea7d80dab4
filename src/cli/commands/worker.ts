import { Command, Option } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { hostOf, integerBetween, labelPair, portOf, positiveInteger, stringList } from '../option-parsers.js';

/**
 * `rollout-queue worker [--queue rollouts] [--concurrency N] [--allow PATTERN ...] …`: serve a
 * queue until SIGTERM/SIGINT (graceful, exit 0); a second signal hands rollouts back at once.
 */
export function workerCommand() {
  return new Command('worker')
    .description(HELP.worker.description)
    .addOption(queueOption())
    .addOption(new Option('--concurrency <n>', HELP.worker.concurrency).argParser(positiveInteger))
    .addOption(new Option('--children <n>', HELP.worker.children).argParser(positiveInteger))
    .addOption(new Option('--blocked-loop-ms <ms>', HELP.worker.blockedLoopMs).argParser(positiveInteger))
    .addOption(new Option('--allow <pattern...>', HELP.worker.allow).argParser(stringList))
    .option('--name <name>', HELP.worker.name)
    .addOption(new Option('--metrics-port <port>', HELP.worker.metricsPort).argParser(portOf('--metrics-port', 9464)))
    .addOption(new Option('--metrics-host <host>', HELP.worker.metricsHost).argParser(hostOf('--metrics-host')))
    .addOption(new Option('--lock-duration-ms <ms>', HELP.worker.lockDurationMs).argParser(positiveInteger))
    .addOption(new Option('--stalled-interval-ms <ms>', HELP.worker.stalledIntervalMs).argParser(positiveInteger))
    .addOption(new Option('--shutdown-grace-ms <ms>', HELP.worker.shutdownGraceMs).argParser(positiveInteger))
    .addOption(new Option('--containment <mode>', HELP.worker.containment).choices(['auto', 'strict', 'process-group']))
    .addOption(new Option('--placement <label>', HELP.worker.placement).argParser(labelPair))
    .option('--fingerprint <value>', HELP.worker.fingerprint)
    .addOption(new Option('--eval-concurrency <n>', HELP.worker.evalConcurrency).argParser(positiveInteger))
    .addOption(new Option('--max-output-bytes <bytes>', HELP.worker.maxOutputBytes).argParser(integerBetween(1024, 512 * 1024 * 1024)))
    .option('--allow-eviction', HELP.allowEviction);
}

/** Parsed options of `worker`, inferred (by extra-typings) from the flags workerCommand declares. */
export type WorkerCommandOptions = ReturnType<ReturnType<typeof workerCommand>['opts']>;
