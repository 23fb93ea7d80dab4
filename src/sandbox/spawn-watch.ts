import { createRequire, syncBuiltinESMExports } from 'node:module';

/**
 * Whether this process may have created a process since it last looked, known without a
 * syscall. A rollout child walks its own children after every rollout (`ownChildren`); almost
 * always there are none, and proving that with the pid cursor costs a read of /proc/loadavg,
 * ~0.1 ms of the child's CPU per rollout on the bench machine (measured: a third of a no-op
 * rollout's child CPU went to that read and /proc/self/statm's). A child of ours can only appear
 * by being created by this process (re-parenting brings only orphans of our own descendants,
 * and there were none after an empty walk), so watching every way this process creates one is
 * as good as the cursor, where every way can be watched:
 * - JavaScript creates processes only through two bindings: `process_wrap`'s `Process#spawn`
 *   (spawn, exec, execFile, fork) and `spawn_sync`'s `spawn` (the *Sync calls). Both are wrapped
 *   to note the spawn before it happens; `process.binding` hands out the same objects Node's own
 *   `child_process` uses, so every caller, CommonJS or ESM, goes through the wrappers.
 * - Native code (`process.dlopen`) and worker threads (their own bindings, not wrapped) can
 *   create processes unseen: once either is used, the watch is blind for good and the caller
 *   falls back to the cursor. So is a process started with code preloaded before the watch
 *   (`--require`, `--import`, a loader: it may hold the bindings' functions unwrapped), and one
 *   where the bindings are not there (a Node without `process.binding`).
 */
interface WatchState {
  installed: boolean;
  /** The watch cannot vouch for anything (see above); sticky. */
  blind: boolean;
  /** A process may have been created since {@link markLooked}. */
  spawned: boolean;
}

const state: WatchState = { installed: false, blind: false, spawned: true };

const PRELOAD_FLAGS = /(?:^|\s)(?:-r|--require|--import|--loader|--experimental-loader)(?:[=\s]|$)/;

/** Code may have run before the watch and kept a binding's function unwrapped. */
function preloaded(): boolean {
  return PRELOAD_FLAGS.test(process.execArgv.join(' ')) || PRELOAD_FLAGS.test(process.env.NODE_OPTIONS ?? '');
}

type Binding = Record<string, unknown>;

/** Replaces `target[name]` (a function) with one that calls `before` first. */
function wrap(target: Binding, name: string, before: () => void): void {
  const original = target[name] as (...args: unknown[]) => unknown;
  target[name] = function (this: unknown, ...args: unknown[]): unknown {
    before();
    return original.apply(this, args);
  };
}

const noteSpawn = (): void => {
  state.spawned = true;
};
const goBlind = (): void => {
  state.blind = true;
};

/**
 * Installs the watch in this process (once; later calls change nothing). Call it before any
 * other code of the process runs: a rollout child does so before it loads rollout code.
 * `process.binding` warns only under `--pending-deprecation`, where the watch is not installed.
 * @returns true when the watch can vouch that no process was created (see {@link spawnedSinceLook}).
 */
export function watchSpawns(): boolean {
  if (state.installed) return !state.blind;
  state.installed = true;
  const binding = (process as unknown as { binding?: (name: string) => Binding }).binding;
  if (preloaded() || process.execArgv.includes('--pending-deprecation') || process.env.NODE_PENDING_DEPRECATION === '1' || typeof binding !== 'function') {
    goBlind();
    return false;
  }
  try {
    const processWrap = binding.call(process, 'process_wrap');
    const spawnSync = binding.call(process, 'spawn_sync');
    const prototype = (processWrap.Process as { prototype?: Binding } | undefined)?.prototype;
    if (!prototype || typeof prototype.spawn !== 'function' || typeof spawnSync.spawn !== 'function') throw new Error('unknown bindings');
    wrap(prototype, 'spawn', noteSpawn);
    wrap(spawnSync, 'spawn', noteSpawn);
    wrap(process as unknown as Binding, 'dlopen', goBlind);
    const threads = createRequire(import.meta.url)('node:worker_threads') as { Worker: new (...args: never[]) => object };
    const Original = threads.Worker;
    // Named as the original: rollout code may read `constructor.name`.
    threads.Worker = class Worker extends Original {
      constructor(...args: never[]) {
        goBlind();
        super(...args);
      }
    };
    // `import { Worker } from 'node:worker_threads'` reads the builtin's ESM facade: update it too.
    syncBuiltinESMExports();
  } catch {
    goBlind();
  }
  return !state.blind;
}

/** True while the watch is installed and not blind: {@link spawnedSinceLook} can be trusted. */
export function watchingSpawns(): boolean {
  return state.installed && !state.blind;
}

/**
 * False only when the watch is installed, not blind, and no process was created since the last
 * {@link markLooked}; true (look for yourself) otherwise.
 */
export function spawnedSinceLook(): boolean {
  return !watchingSpawns() || state.spawned;
}

/** The caller is about to look at this process' children: spawns from now on count again. */
export function markLooked(): void {
  state.spawned = false;
}
