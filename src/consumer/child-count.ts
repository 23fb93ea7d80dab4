import os from 'node:os';

/** Slots one shared child is sized for by default: rollouts that mostly wait (on a model, a judge) share its event loop. */
export const SLOTS_PER_CHILD = 32;

/** Memory a shared child is budgeted by default, MiB: an idle Node child holds ~40 MiB; the rest is room for its rollouts. */
export const CHILD_BUDGET_MB = 256;

/** What {@link defaultChildren} reads of the machine. */
export interface MachineFacts {
  /** Cores this process may use (`os.availableParallelism()`). */
  readonly cores: number;
  /** Memory available now, MiB (`os.freemem()`). */
  readonly freeMb: number;
}

/** This machine's {@link MachineFacts}. */
export function machineFacts(): MachineFacts {
  return { cores: os.availableParallelism(), freeMb: Math.floor(os.freemem() / (1024 * 1024)) };
}

/**
 * The default number of shared rollout children of a worker with `slots` rollout slots (its
 * `concurrency` plus `evalConcurrency`): one per {@link SLOTS_PER_CHILD} slots, at most one per core
 * (rollout code a child runs uses one core at most) and one per {@link CHILD_BUDGET_MB} MiB of free
 * memory, at least 1 and at most `slots`. Processes are for fault isolation; slots that wait share one.
 * Examples on 2 cores with memory to spare: 2 slots → 1 child, 50 → 2, 500 → 2; on 16 cores: 50 → 2,
 * 200 → 7, 500 → 16.
 */
export function defaultChildren(slots: number, machine: MachineFacts = machineFacts()): number {
  const bySlots = Math.ceil(slots / SLOTS_PER_CHILD);
  const byMemory = Math.floor(machine.freeMb / CHILD_BUDGET_MB);
  return Math.max(1, Math.min(slots, bySlots, machine.cores, byMemory));
}
