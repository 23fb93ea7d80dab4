import type { CostReceipt, RolloutContext, RolloutLogger } from '../../../src/spec/index.js';

/** A log line captured by {@link fakeContext}'s logger. */
export interface LoggedLine {
  readonly level: 'info' | 'warn' | 'error' | 'debug';
  readonly obj: object | string;
  readonly msg: string | undefined;
}

/** A {@link RolloutContext} for unit tests plus what it collected. */
export interface FakeContext extends RolloutContext {
  readonly costs: CostReceipt[];
  readonly logged: LoggedLine[];
}

/**
 * A minimal rollout context: a lease id unique per call and test process (so work
 * directories are easy to find),
 * no secrets unless given, a logger and `recordCost` that collect into arrays.
 */
export function fakeContext(overrides: Partial<RolloutContext> = {}): FakeContext {
  const costs: CostReceipt[] = [];
  const logged: LoggedLine[] = [];
  const line = (level: LoggedLine['level']) => (obj: object | string, msg?: string) => {
    logged.push({ level, obj, msg });
  };
  const log: RolloutLogger = { info: line('info'), warn: line('warn'), error: line('error'), debug: line('debug') };
  fakeContextCount += 1;
  return {
    leaseId: `unit-test.p${process.pid}-t${fakeContextCount}`,
    runId: 'unit-test',
    runAttemptId: `attempt-${process.pid}`,
    taskId: `task-${fakeContextCount}`,
    attempt: 1,
    signal: new AbortController().signal,
    secrets: {},
    placement: {},
    timeouts: { runMs: 600_000, rewardMs: 60_000, hangMs: 900_000 },
    memoryMb: 1024,
    goldKeys: [],
    log,
    recordCost: async (receipt) => {
      costs.push(receipt);
    },
    ...overrides,
    costs,
    logged,
  };
}

let fakeContextCount = 0;
