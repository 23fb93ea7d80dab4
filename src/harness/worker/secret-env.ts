/** Dispatches in this process that hold each variable set, and the value it had before the first. */
const holders = new Map<string, { count: number; before: string | undefined }>();

/**
 * Sets the named secrets in `process.env` for a Dispatch that reads its credentials there (an
 * SDK reading `OPENAI_API_KEY`), and returns the undo. A rollout child hosts several rollouts
 * at once: a name is set while at least one dispatch that named it runs (every worker reads the
 * same value from its own environment), then restored to what it was. A Dispatch is the worker's
 * own trusted code (DESIGN.md "Tenancy"): a program it spawns gets this environment unless it
 * passes its own; rollout-queue's code runner never passes `process.env` to a program.
 */
export function setSecretEnv(secrets: Readonly<Record<string, string>>): () => void {
  const names = Object.keys(secrets);
  for (const name of names) {
    const held = holders.get(name);
    if (held) held.count++;
    else holders.set(name, { count: 1, before: process.env[name] });
    process.env[name] = secrets[name];
  }
  let undone = false;
  return () => {
    if (undone) return;
    undone = true;
    for (const name of names) {
      const held = holders.get(name);
      if (!held || --held.count > 0) continue;
      holders.delete(name);
      if (held.before === undefined) delete process.env[name];
      else process.env[name] = held.before;
    }
  };
}
