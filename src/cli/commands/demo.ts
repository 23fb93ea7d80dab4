import { Command, Option } from '@commander-js/extra-typings';
import { HELP } from '../messages.js';
import { documentDefault } from '../option-help.js';
import { portOf, positiveInteger } from '../option-parsers.js';

/** `rollout-queue demo [--workers 2] [--tasks N] [--concurrency 2] [--port 0] [--keep] [--out FILE]`. */
export function demoCommand() {
  return new Command('demo')
    .description(HELP.demo.description)
    .addOption(new Option('--workers <n>', HELP.demo.workers).default(2).argParser(positiveInteger))
    .addOption(new Option('--tasks <n>', HELP.demo.tasks).default(240).argParser(positiveInteger))
    .addOption(new Option('--concurrency <n>', HELP.demo.concurrency).default(2).argParser(positiveInteger))
    .addOption(new Option('--port <port>', HELP.demo.port).default(0).argParser(portOf('--port', 3000)))
    .option('--keep', HELP.demo.keep)
    .addOption(documentDefault(new Option('--out <file>', HELP.demo.out), 'results-<runId>.jsonl'));
}

/** Parsed options of `demo`, inferred (by extra-typings) from the flags demoCommand declares. */
export type DemoCommandOptions = ReturnType<ReturnType<typeof demoCommand>['opts']>;
