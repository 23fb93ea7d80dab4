import { Option } from '@commander-js/extra-typings';
import { DEFAULT_QUEUE } from '../lease/index.js';
import { EXIT, type ExitCode } from './errors.js';
import { HELP } from './messages.js';
import { queueName } from './option-parsers.js';

/** Shared state of one CLI invocation: the exit code an action decided on. */
export interface CommandContext {
  exitCode: ExitCode;
}

/** A fresh context (exit code 0). */
export function createContext(): CommandContext {
  return { exitCode: EXIT.ok };
}

/** `--queue <name>`, default `rollouts`, checked like every queue name. */
export function queueOption() {
  return new Option('--queue <name>', HELP.queue).default(DEFAULT_QUEUE).argParser(queueName);
}
