import os from 'node:os';
import type { CommandUnknownOpts, Option } from '@commander-js/extra-typings';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildDrafts } from '../../../src/cli/build-drafts.js';
import { checkDrafts } from '../../../src/cli/check-drafts.js';
import { commandsWithActions } from '../../../src/cli/command-actions.js';
import { createContext } from '../../../src/cli/command-context.js';
import { cliEnvironment } from '../../../src/cli/environment.js';
import { metricsOf } from '../../../src/cli/execute-interruptible-run.js';
import { applyHelpConventions, defaultText, isRequired } from '../../../src/cli/option-help.js';
import { durationMs } from '../../../src/cli/option-parsers.js';
import { defaultOutFile } from '../../../src/cli/run-id.js';
import { CHILD_BUDGET_MB, defaultChildren, SLOTS_PER_CHILD } from '../../../src/consumer/child-count.js';
import { compileWorkerOptions } from '../../../src/consumer/index.js';
import { environmentFingerprint, fingerprintInputs } from '../../../src/consumer/environment-fingerprint.js';
import { compileGatewayOptions } from '../../../src/gateway/index.js';
import { compileQueueDispatchOptions } from '../../../src/harness/coordinator/dispatch-options.js';
import { TimeoutsSchema } from '../../../src/spec/index.js';
import { redisOptionsFromUrl } from '../../../src/platform/redis-connection.js';
import { compileProducerOptions, DEFAULT_RUN_WEIGHT } from '../../../src/producer/index.js';
import { DEFAULT_CPUS, DEFAULT_DISK_MB } from '../../../src/spec/index.js';

// Issue 31: help text that matches behaviour. Each default a --help documents is compared with
// what the code does when the option is left out: the value commander passes, or the default
// the layer below applies (worker options compiled, producer options compiled, the spec schema
// filling a draft through the CLI's own path, the gateway's options). A new option with a
// documented default fails here until it is added to BEHAVIOUR.

const DRAFT_SPEC = (() => {
  const ref = { $ref: 'rollout-queue/rewards:exactMatch', config: {} };
  const tasks = [{ taskKey: 't1', task: { id: 't1', answer: 1 }, line: 1 }];
  return checkDrafts('tasks.jsonl', tasks, buildDrafts(tasks, { rendered: 'print(1)', run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.py' } }, reward: ref }))[0];
})();
const worker = () => compileWorkerOptions({});
const producer = () => compileProducerOptions({});
const connection = {
  '--redis-url': () => `env REDIS_URL, else ${cliEnvironment({}).redisUrl}`,
  '--prefix': () => `env ROLLOUT_QUEUE_PREFIX, else ${cliEnvironment({}).prefix}`,
  // What every client is given when neither the flag nor the variable is set.
  '--redis-timeout-ms': () => `env ROLLOUT_QUEUE_REDIS_TIMEOUT_MS, else ${redisOptionsFromUrl('redis://x').commandTimeout}`,
};
const retain = () => (durationMs('3d') === producer().retainMs ? '3d' : `${producer().retainMs} ms`);

/** command → flag → the default as behaviour has it, written as help writes it. */
const BEHAVIOUR: Record<string, Record<string, () => string>> = {
  worker: {
    '--queue': () => worker().queue,
    '--concurrency': () => String(worker().concurrency),
    '--name': () => (worker().name === `${os.hostname()}-${process.pid}` ? '<host>-<pid>' : worker().name),
    '--metrics-host': () => worker().metricsHost,
    '--lock-duration-ms': () => String(worker().lockDurationMs),
    '--stalled-interval-ms': () => String(worker().stalledIntervalMs),
    '--shutdown-grace-ms': () => String(worker().shutdownGraceMs),
    '--containment': () => `env ROLLOUT_QUEUE_CONTAINMENT, else ${worker().containment}`,
    '--fingerprint': () => (worker().fingerprint === environmentFingerprint(fingerprintInputs()) ? 'computed from the rollout-queue, node and python versions and env ROLLOUT_QUEUE_IMAGE_ID' : worker().fingerprint),
    '--eval-concurrency': () => String(worker().evalConcurrency),
    '--max-output-bytes': () => String(worker().maxOutputBytes),
    '--max-spec-bytes': () => String(worker().maxSpecBytes),
    // Issue 32: left out, the worker sizes its shared children from its slots and the machine.
    '--children': () =>
      worker().children === defaultChildren(worker().concurrency + worker().evalConcurrency)
        ? `one per ${SLOTS_PER_CHILD} slots, at most one per core and per ${CHILD_BUDGET_MB} MiB free memory`
        : String(worker().children),
    '--blocked-loop-ms': () => String(worker().blockedLoopMs),
    ...connection,
  },
  run: {
    '--run-id': () => 'generated',
    '--out': () => defaultOutFile('<runId>'),
    '--queue': () => producer().queue,
    '--max-in-flight': () => String(producer().maxInFlight),
    '--weight': () => String(DEFAULT_RUN_WEIGHT),
    '--max-spec-bytes': () => String(producer().maxSpecBytes),
    '--run-ms': () => String(DRAFT_SPEC?.timeouts.runMs),
    '--reward-ms': () => String(DRAFT_SPEC?.timeouts.rewardMs),
    '--hang-ms': () => String(DRAFT_SPEC?.timeouts.hangMs),
    '--memory-mb': () => String(DRAFT_SPEC?.sandbox.memoryMb),
    // Left out of the spec, the sandbox applies these to the programs it runs (src/sandbox).
    '--cpus': () => String(DRAFT_SPEC?.sandbox.cpus ?? DEFAULT_CPUS),
    '--disk-mb': () => String(DRAFT_SPEC?.sandbox.diskMb ?? DEFAULT_DISK_MB),
    '--network': () => DRAFT_SPEC?.sandbox.network ?? 'none',
    '--retain': retain,
    '--metrics-host': () => metricsOf({ metricsPort: 0 }).metrics?.host ?? 'none',
    '--class': () => String(DRAFT_SPEC?.class),
    ...connection,
  },
  resume: {
    '--out': () => `the results file its run command recorded, else ${defaultOutFile('<runId>')}`,
    '--retain': retain,
    '--metrics-host': () => metricsOf({ metricsPort: 0 }).metrics?.host ?? 'none',
    '--queue': () => producer().queue,
    ...connection,
  },
  status: { '--queue': () => producer().queue, ...connection },
  cancel: { '--queue': () => producer().queue, ...connection },
  purge: { '--queue': () => producer().queue, ...connection },
  dashboard: { '--port': () => '3000', '--host': () => '127.0.0.1', '--queue': () => 'rollouts and every queue found under the prefix', ...connection },
  gateway: {
    '--host': () => compileGatewayOptions({ redisUrl: 'redis://x', port: 0, noAuth: true }).host,
    '--queue': () => compileGatewayOptions({ redisUrl: 'redis://x', port: 0, noAuth: true }).queue,
    '--max-body-bytes': () => String(compileGatewayOptions({ redisUrl: 'redis://x', port: 0, noAuth: true }).maxBodyBytes),
    // Issue 29: a dispatch's runMs left out is the spec's; keepAnswerMs queueDispatch's; graceMs the gateway's.
    '--run-ms': () => String(TimeoutsSchema.parse({}).runMs),
    '--grace-ms': () => String(compileGatewayOptions({ redisUrl: 'redis://x', port: 0, noAuth: true }).graceMs),
    '--keep-answer-ms': () => String(compileQueueDispatchOptions({ dispatch: { $ref: 'x:y', config: {} } }).keepAnswerMs),
    ...connection,
  },
  demo: { '--workers': () => '2', '--tasks': () => '240', '--concurrency': () => '2', '--port': () => '0', '--out': () => defaultOutFile('<runId>'), ...connection },
};

let saved: NodeJS.ProcessEnv;
beforeEach(() => {
  saved = { ...process.env };
  for (const name of ['REDIS_URL', 'ROLLOUT_QUEUE_PREFIX', 'ROLLOUT_QUEUE_CONTAINMENT']) delete process.env[name];
});
afterEach(() => {
  process.env = saved;
});

function commands(): CommandUnknownOpts[] {
  const list = commandsWithActions(createContext());
  for (const command of list) applyHelpConventions(command);
  return list;
}

describe('--help of every command', () => {
  it('documents exactly the defaults the code applies, each written one way: "(default: …)"', () => {
    for (const command of commands()) {
      const expected = BEHAVIOUR[command.name()] ?? {};
      const documented = Object.fromEntries(command.options.flatMap((option: Option) => {
        const text = defaultText(option);
        return text === undefined ? [] : [[option.long as string, text]];
      }));
      expect(Object.keys(documented).sort(), `${command.name()}: options with a documented default`).toEqual(Object.keys(expected).sort());
      for (const [flag, behaviour] of Object.entries(expected)) expect(documented[flag], `${command.name()} ${flag}`).toBe(behaviour());
      for (const option of command.options) expect(option.description, `${command.name()} ${option.long}`).not.toMatch(/\bdefault\b/i);
    }
  });

  it('has --redis-url and --prefix, marks required options in the list and the usage line, and ends with Examples', () => {
    for (const command of commands()) {
      const text = captureHelp(command);
      const help = text;
      expect(help).toContain('--redis-url <url>');
      expect(help).toContain('--prefix <prefix>');
      expect(text, command.name()).toMatch(/\nExamples:\n( {2}.+\n)+$/);
      for (const option of command.options.filter(isRequired)) {
        expect(command.usage()).toContain(option.flags);
        expect(help).toMatch(new RegExp(`${option.long}[^\\n]*[\\s\\S]*?\\(required`));
      }
    }
    expect(commands().find((command) => command.name() === 'run')?.usage()).toBe('--tasks <file> --artifact <path> --run <target> --reward <target> [options]');
  });

  // Issue 31: `resume --help` said its results file defaults to results-<runId>.jsonl; resume
  // collects into the file the run's coordinator recorded when there is one.
  it('resume --help names the recorded results file as the default', () => {
    const resume = commands().find((command) => command.name() === 'resume') as CommandUnknownOpts;
    expect(resume.helpInformation().replace(/\s+/g, ' ')).toContain('(default: the results file its run command recorded, else results-<runId>.jsonl)');
  });
});

/** The whole `--help` output of `command`, after-text (Examples) included. */
function captureHelp(command: CommandUnknownOpts): string {
  let text = '';
  command.configureOutput({ writeOut: (chunk) => void (text += chunk), writeErr: (chunk) => void (text += chunk) });
  command.exitOverride();
  try {
    command.parse(['--help'], { from: 'user' });
  } catch {
    // commander's help exit
  }
  return text;
}
