/**
 * Polls `condition` every `intervalMs` until it holds; for states no event announces (queue
 * counts). Prefer waiting on an event where one exists.
 * @throws Error naming `what` (a function is called then, to describe the state seen) after `timeoutMs`.
 */
export async function waitFor(condition: () => Promise<boolean> | boolean, what: string | (() => string) = 'condition', timeoutMs = 10_000, intervalMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
