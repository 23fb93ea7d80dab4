import { Command, Option } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { documentDefault } from '../option-help.js';
import { durationMs, hostOf, portOf, runId } from '../option-parsers.js';

/** `rollout-queue resume RUN_ID [--out FILE]`: re-attach to a run after its coordinator died. */
export function resumeCommand() {
  return new Command('resume')
    .description(HELP.resume.description)
    .argument('<runId>', 'run id', runId)
    .addOption(documentDefault(new Option('--out <file>', HELP.resume.out), 'the results file its run command recorded, else results-<runId>.jsonl'))
    .addOption(documentDefault(new Option('--retain <duration>', HELP.run.retain), '3d').argParser(durationMs))
    .addOption(new Option('--metrics-port <port>', HELP.resume.metricsPort).argParser(portOf('--metrics-port', 9465)))
    .addOption(documentDefault(new Option('--metrics-host <host>', HELP.resume.metricsHost), '127.0.0.1').argParser(hostOf('--metrics-host')))
    .addOption(queueOption());
}

/** Parsed options of `resume`, inferred (by extra-typings) from the flags resumeCommand declares. */
export type ResumeCommandOptions = ReturnType<ReturnType<typeof resumeCommand>['opts']>;
