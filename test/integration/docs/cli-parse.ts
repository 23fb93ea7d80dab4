import { Command, CommanderError, type CommandUnknownOpts, type Option } from '@commander-js/extra-typings';
import { cancelCommand } from '../../../src/cli/commands/cancel.js';
import { dashboardCommand } from '../../../src/cli/commands/dashboard.js';
import { demoCommand } from '../../../src/cli/commands/demo.js';
import { gatewayCommand } from '../../../src/cli/commands/gateway.js';
import { purgeCommand } from '../../../src/cli/commands/purge.js';
import { resumeCommand } from '../../../src/cli/commands/resume.js';
import { runCommand } from '../../../src/cli/commands/run.js';
import { statusCommand } from '../../../src/cli/commands/status.js';
import { workerCommand } from '../../../src/cli/commands/worker.js';
import { applyHelpConventions } from '../../../src/cli/option-help.js';

/** The real command declarations (flags, parsers, choices, required options), without their actions. */
function declaredCommands(): CommandUnknownOpts[] {
  return [workerCommand(), runCommand(), resumeCommand(), statusCommand(), cancelCommand(), purgeCommand(), dashboardCommand(), gatewayCommand(), demoCommand()];
}

/** What parsing a command line gave: the command it named, or commander's own error message. */
export type ParseOutcome = { readonly ok: true; readonly command: string } | { readonly ok: false; readonly error: string };

/**
 * Parses `args` (what follows `rollout-queue`) exactly as the CLI does — its command declarations,
 * option parsers, choices and `--redis-url`/`--prefix` — with every action replaced by one that
 * only records which command ran. Nothing touches Redis. The connection flags' hook writes
 * `REDIS_URL`/`ROLLOUT_QUEUE_PREFIX` into the environment (how the CLI passes them on), so both are
 * put back afterwards.
 */
export function parseCliLine(args: readonly string[]): ParseOutcome {
  const saved = { url: process.env.REDIS_URL, prefix: process.env.ROLLOUT_QUEUE_PREFIX };
  let ran: string | undefined;
  let errorText = '';
  const output = { writeOut: () => undefined, writeErr: (text: string) => void (errorText += text), outputError: (text: string) => void (errorText += text) };
  const program = new Command('rollout-queue').exitOverride().configureOutput(output).version('0.0.0', '-V, --version');
  for (const command of declaredCommands()) {
    applyHelpConventions(command);
    command.exitOverride().configureOutput(output).allowExcessArguments(false);
    command.action(() => {
      ran = command.name();
    });
    program.addCommand(command);
  }
  try {
    program.parse([...args], { from: 'user' });
    if (ran === undefined) return { ok: false, error: `no command ran for: ${args.join(' ')}` };
    return { ok: true, command: ran };
  } catch (err) {
    if (err instanceof CommanderError && err.exitCode === 0) return { ok: true, command: 'help' };
    return { ok: false, error: errorText.trim() || (err instanceof Error ? err.message : String(err)) };
  } finally {
    restore('REDIS_URL', saved.url);
    restore('ROLLOUT_QUEUE_PREFIX', saved.prefix);
  }
}

function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

/** The options `command` declares, `--redis-url` and `--prefix` included, or undefined for a command the CLI does not have. */
export function optionsOf(command: string): readonly Option[] | undefined {
  const declared = declaredCommands().find((candidate) => candidate.name() === command);
  if (!declared) return undefined;
  applyHelpConventions(declared);
  return declared.options;
}

/** Every long flag of `command` (`--tasks`, `--redis-url`…), or undefined for a command the CLI does not have. */
export function flagsOf(command: string): Set<string> | undefined {
  const options = optionsOf(command);
  if (!options) return undefined;
  const flags = new Set(['--help']);
  for (const option of options) {
    if (option.long) flags.add(option.long);
    if (option.negate && option.long) flags.add(option.long.replace(/^--no-/, '--'));
  }
  return flags;
}
