import type { Logger } from '../platform/logger.js';
import type { SecretValues } from '../spec/index.js';

/**
 * Secret values shorter than this many characters are too short to redact meaningfully: `[secret
 * NAME]` then also replaces the same characters wherever the output has them by chance (a value
 * `4` turns a printed `42` into `[secret SHORT]2`), and the value is easy to guess.
 */
export const MIN_REDACTABLE_SECRET_CHARS = 8;

/** Names already warned about by this process: one warning per name, at its first use. */
const warned = new Set<string>();

/**
 * Logs a warning, once per name per process, for each secret in `secrets` whose value is shorter
 * than {@link MIN_REDACTABLE_SECRET_CHARS}. Redaction still applies to what is stored and logged
 * (the value is never written); the warning says what it costs and the fix. Names only, never a value.
 * @param spec the lease and run that first used it, for the log line (only `runId` and `leaseId` are read).
 * @returns `secrets`, as given.
 */
export function warnShortSecrets<S extends SecretValues>(secrets: S, logger: Logger, spec: { readonly runId: string; readonly leaseId: string }): S {
  for (const [name, value] of Object.entries(secrets)) {
    if (value.length === 0 || value.length >= MIN_REDACTABLE_SECRET_CHARS || warned.has(name)) continue;
    warned.add(name);
    logger.warn(
      { runId: spec.runId, leaseId: spec.leaseId, secretName: name, minChars: MIN_REDACTABLE_SECRET_CHARS },
      `secret ${name} (named in sandbox.env) has a value shorter than ${MIN_REDACTABLE_SECRET_CHARS} characters: it is still replaced by [secret ${name}] ` +
        'in every stored output, error and log line, also where those characters appear by chance (the reward scores the raw output); ' +
        `give ${name} a longer value, or pass a value that is not secret in the task instead`,
    );
  }
  return secrets;
}
