import { Command, Option } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { durationMs, hostOf, portOf, runId } from '../option-parsers.js';

/** `rollout-queue resume RUN_ID [--out FILE]`: re-attach to a run after its coordinator died. */
export function resumeCommand() {
  return new Command('resume')
    .description(HELP.resume.description)
    .argument('<runId>', 'run id', runId)
    .option('--out <file>', HELP.resume.out)
    .addOption(new Option('--retain <duration>', HELP.run.retain).argParser(durationMs))
    .addOption(new Option('--metrics-port <port>', HELP.resume.metricsPort).argParser(portOf('--metrics-port', 9465)))
    .addOption(new Option('--metrics-host <host>', HELP.resume.metricsHost).argParser(hostOf('--metrics-host')))
    .addOption(queueOption());
}

/** Parsed options of `resume`, inferred (by extra-typings) from the flags resumeCommand declares. */
export type ResumeCommandOptions = ReturnType<ReturnType<typeof resumeCommand>['opts']>;
