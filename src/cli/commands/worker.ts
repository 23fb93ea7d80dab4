import { Command, Option } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { documentDefault } from '../option-help.js';
import { CONTAINMENT_MODES } from '../../sandbox/index.js';
import { hostOf, integerBetween, labelPair, portOf, positiveInteger, stringList } from '../option-parsers.js';

/**
 * `rollout-queue worker [--queue rollouts] [--concurrency N] [--allow PATTERN ...] …`: serve a
 * queue until SIGTERM/SIGINT (graceful, exit 0); a second signal hands rollouts back at once.
 */
export function workerCommand() {
  return new Command('worker')
    .description(HELP.worker.description)
    .addOption(queueOption())
    .addOption(documentDefault(new Option('--concurrency <n>', HELP.worker.concurrency), 2).argParser(positiveInteger))
    .addOption(documentDefault(new Option('--children <n>', HELP.worker.children), 'one per 32 slots, at most one per core and per 256 MiB free memory').argParser(positiveInteger))
    .addOption(documentDefault(new Option('--blocked-loop-ms <ms>', HELP.worker.blockedLoopMs), 10000).argParser(positiveInteger))
    .addOption(new Option('--allow <pattern...>', HELP.worker.allow).argParser(stringList))
    .addOption(documentDefault(new Option('--name <name>', HELP.worker.name), '<host>-<pid>'))
    .addOption(new Option('--metrics-port <port>', HELP.worker.metricsPort).argParser(portOf('--metrics-port', 9464)))
    .addOption(documentDefault(new Option('--metrics-host <host>', HELP.worker.metricsHost), '127.0.0.1').argParser(hostOf('--metrics-host')))
    .addOption(documentDefault(new Option('--lock-duration-ms <ms>', HELP.worker.lockDurationMs), 5000).argParser(positiveInteger))
    .addOption(documentDefault(new Option('--stalled-interval-ms <ms>', HELP.worker.stalledIntervalMs), 2000).argParser(positiveInteger))
    .addOption(documentDefault(new Option('--shutdown-grace-ms <ms>', HELP.worker.shutdownGraceMs), 30000).argParser(positiveInteger))
    .addOption(documentDefault(new Option('--containment <mode>', HELP.worker.containment), 'env ROLLOUT_QUEUE_CONTAINMENT, else auto').choices(CONTAINMENT_MODES))
    .option('--allow-network', HELP.worker.allowNetwork)
    .addOption(new Option('--expose <path...>', HELP.worker.expose).argParser(stringList))
    .addOption(new Option('--placement <label>', HELP.worker.placement).argParser(labelPair))
    .addOption(documentDefault(new Option('--fingerprint <value>', HELP.worker.fingerprint), 'computed from the rollout-queue, node and python versions and env ROLLOUT_QUEUE_IMAGE_ID'))
    .addOption(documentDefault(new Option('--eval-concurrency <n>', HELP.worker.evalConcurrency), 1).argParser(positiveInteger))
    .addOption(documentDefault(new Option('--max-output-bytes <bytes>', HELP.worker.maxOutputBytes), 64 * 1024 * 1024).argParser(integerBetween(1024, 512 * 1024 * 1024)))
    .addOption(documentDefault(new Option('--max-spec-bytes <bytes>', HELP.worker.maxSpecBytes), 64 * 1024 * 1024).argParser(integerBetween(1024, 512 * 1024 * 1024)))
    .option('--allow-eviction', HELP.allowEviction);
}

/** Parsed options of `worker`, inferred (by extra-typings) from the flags workerCommand declares. */
export type WorkerCommandOptions = ReturnType<ReturnType<typeof workerCommand>['opts']>;
