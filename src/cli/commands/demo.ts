import { Command, Option } from '@commander-js/extra-typings';
import { HELP } from '../messages.js';
import { positiveInteger } from '../option-parsers.js';

/** `rollout-queue demo [--workers 2] [--tasks N] [--concurrency 2] [--keep] [--out FILE]`. */
export function demoCommand() {
  return new Command('demo')
    .description(HELP.demo.description)
    .addOption(new Option('--workers <n>', HELP.demo.workers).default(2).argParser(positiveInteger))
    .addOption(new Option('--tasks <n>', HELP.demo.tasks).default(240).argParser(positiveInteger))
    .addOption(new Option('--concurrency <n>', HELP.demo.concurrency).default(2).argParser(positiveInteger))
    .option('--keep', HELP.demo.keep)
    .option('--out <file>', HELP.demo.out);
}

/** Parsed options of `demo`, inferred (by extra-typings) from the flags demoCommand declares. */
export type DemoCommandOptions = ReturnType<ReturnType<typeof demoCommand>['opts']>;
