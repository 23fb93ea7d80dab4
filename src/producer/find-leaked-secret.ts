/**
 * Names of coordinator environment variables that hold secrets by convention:
 * `*_KEY`, `*_TOKEN`, `*_SECRET`, anything with `PASSWORD` (case-insensitive).
 */
export const SECRET_NAME = /(_KEY|_TOKEN|_SECRET)$|PASSWORD/i;

/** Shortest value of a secret-looking variable that is searched for (shorter ones match by accident). */
export const MIN_SECRET_CHARS = 8;

/** Shortest value of a variable named in `sandbox.env` that is searched for; "1" or "yes" would match anything. */
export const MIN_SANDBOX_ENV_CHARS = 4;

/**
 * Returns the NAME of the first coordinator environment variable whose value appears in a
 * serialized spec, or undefined. A spec must carry secret names (`sandbox.env`), never values:
 * job data sits in Redis in clear text and shows in dashboards (BullMQ docs, "going to
 * production: protecting data").
 *
 * Checked values: every variable named in the spec's `sandbox.env` that is set here
 * (≥ {@link MIN_SANDBOX_ENV_CHARS} chars), and every variable whose name looks secret
 * ({@link SECRET_NAME}, ≥ {@link MIN_SECRET_CHARS} chars). Both the raw and the JSON-escaped
 * form of a value are searched. Never returns or logs the value itself.
 *
 * @param specJson `JSON.stringify` of the spec as it would be enqueued.
 * @param sandboxEnv the spec's `sandbox.env` names.
 * @param env the coordinator's environment (default `process.env`).
 */
export function findLeakedSecret(
  specJson: string,
  sandboxEnv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const candidates: [string, string][] = [];
  for (const name of sandboxEnv) {
    const value = env[name];
    if (value !== undefined && value.length >= MIN_SANDBOX_ENV_CHARS) candidates.push([name, value]);
  }
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && value.length >= MIN_SECRET_CHARS && SECRET_NAME.test(name)) candidates.push([name, value]);
  }
  for (const [name, value] of candidates) {
    if (specJson.includes(value) || specJson.includes(JSON.stringify(value).slice(1, -1))) return name;
  }
  return undefined;
}
