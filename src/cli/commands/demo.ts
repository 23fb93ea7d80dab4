import { Command, Option } from 'commander';
import type { DemoOptions } from '../actions/demo.js';
import type { CommandContext } from '../command-context.js';
import { HELP } from '../messages.js';
import { positiveInteger } from '../option-parsers.js';

/** `rollout-queue demo [--workers 2] [--tasks N] [--concurrency 2] [--keep] [--out FILE]`. */
export function demoCommand(ctx: CommandContext): Command {
  return new Command('demo')
    .description(HELP.demo.description)
    .addOption(new Option('--workers <n>', HELP.demo.workers).default(2).argParser(positiveInteger))
    .addOption(new Option('--tasks <n>', HELP.demo.tasks).default(240).argParser(positiveInteger))
    .addOption(new Option('--concurrency <n>', HELP.demo.concurrency).default(2).argParser(positiveInteger))
    .option('--keep', HELP.demo.keep)
    .option('--out <file>', HELP.demo.out)
    .action(async (options: DemoOptions) => {
      const { demoAction } = await import('../actions/demo.js');
      ctx.exitCode = await demoAction(options);
    });
}
