import { cliCommand } from '../cli-command.js';
import { queueFlag } from './message-parts.js';

/** Texts about the results file (--out): refusals, reopening, a run Redis lost. */
export const RESULTS_FILE_MSG = {
  resultsCorrupt: (file: string, line: number) => `${file}:${line} is not a result line; move the file away or pass another --out`,
  resultsOtherRun: (file: string, found: string, runId: string) =>
    `${file} holds results of run "${found}", not "${runId}"; pass another --out`,
  outIsDirectory: (file: string) => `--out ${file} is a directory; pass a file path instead, e.g. --out ${file.replace(/\/+$/, '')}/results.jsonl`,
  outNotRegular: (file: string, kind: string) =>
    `--out ${file} is a ${kind}, not a regular file; results must go to a file that can be re-opened on resume: pass a file path, e.g. --out results.jsonl`,
  outUnderFile: (file: string, parent: string) =>
    `--out ${file}: ${parent} is a file, not a directory; pass a path inside a directory, e.g. --out results.jsonl`,
  outNotWritable: (file: string, why: string) =>
    `--out ${file} cannot be opened for appending (${why}); pass a path in a directory you can write to, e.g. --out results.jsonl`,
  resultsWriteFailed: (file: string, why: string, runId: string, queue: string) =>
    `writing a result to ${file} failed (${why}); stopped, the result stays in Redis. Free space or fix the file, then collect the rest with: ${cliCommand()} resume ${runId}${queueFlag(queue)} --out ${file}`,
  resultsOfGoneRun: (file: string, runId: string, count: number) =>
    `warning: Redis has no run ${runId}, though ${file} holds ${count} of its Results (purged, past its retention, or lost in a Redis restart): ` +
    `every task runs again, and the Results already in the file are kept as they are, made from whatever tasks and inputs the run had then. ` +
    `If the tasks or inputs changed, stop (Ctrl-C) and use a new --run-id or another --out`,
  resultsAllInFileOfGoneRun: (file: string, runId: string, tasks: number) =>
    `Redis has no run ${runId} any more (purged, past its retention, or lost in a Redis restart), and ${file} holds a Result for every one of its ${tasks} task(s): ` +
    `nothing runs again. To run the tasks again, pass a new --run-id (or leave it out)`,
  resultsReopened: (file: string, count: number, dropped: boolean) =>
    `${file} already holds ${count} result(s)${dropped ? ' (a partial last line was dropped)' : ''}; they are kept and not written again`,
} as const;
