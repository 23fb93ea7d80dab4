import type { Redis } from 'ioredis';

/** A Lua script run by hash: see {@link redisScript}. */
export interface RedisScript {
  /**
   * Runs the script on `redis` with `keys` then `args` (ioredis `defineCommand`: EVALSHA, and
   * EVAL once when Redis answers NOSCRIPT, e.g. after a restart or SCRIPT FLUSH).
   * @throws whatever Redis answers (a script error, a refused write).
   */
  run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
}

type Defined = Record<string, (...argv: (string | number)[]) => unknown>;

const defined = new WeakMap<object, Set<string>>();

/**
 * A Lua script sent by its SHA1 rather than its text on every call (Redis `EVALSHA`, through
 * ioredis' `defineCommand`, which falls back to `EVAL` on NOSCRIPT). `name` must be unique in
 * the process; the command is defined on each client the first time it runs there.
 * @param name a JavaScript identifier, e.g. `rqNoteStart`.
 * @param lua the script; `KEYS` are the first `numberOfKeys` arguments.
 * @param numberOfKeys how many keys every call passes, or `'any'` when each call passes its own number.
 */
export function redisScript(name: string, lua: string, numberOfKeys: number | 'any'): RedisScript {
  const ensure = (redis: Redis): Defined => {
    let names = defined.get(redis);
    if (!names) defined.set(redis, (names = new Set()));
    if (!names.has(name)) {
      redis.defineCommand(name, numberOfKeys === 'any' ? { lua } : { lua, numberOfKeys });
      names.add(name);
    }
    return redis as unknown as Defined;
  };
  return {
    run(redis, keys, args) {
      const command = ensure(redis)[name] as (...argv: (string | number)[]) => Promise<unknown>;
      // Without a fixed count ioredis takes the count as the first argument (EVALSHA numkeys).
      if (numberOfKeys === 'any') return command.call(redis, keys.length, ...keys, ...args);
      if (keys.length !== numberOfKeys) throw new Error(`script ${name} takes ${numberOfKeys} keys, got ${keys.length}`);
      return command.call(redis, ...keys, ...args);
    },
  };
}
