/**
 * Secret values by name (`sandbox.env` names → the worker's values), as rollout code sees
 * them in `ctx.secrets`.
 */
export type SecretValues = Readonly<Record<string, string>>;

/** The placeholder a secret value is replaced by: `[secret NAME]`. */
export function secretPlaceholder(name: string): string {
  return `[secret ${name}]`;
}

/**
 * Replaces every secret value in `text` with `[secret NAME]`, longest values first (so a
 * value that contains another is replaced whole). Empty values are skipped (they would
 * match everywhere). The worker applies this to everything a rollout emits before it leaves
 * the worker (DESIGN.md "Containment"); runners use it on the messages they build.
 */
export function redactSecrets(text: string, secrets: SecretValues): string {
  let result = text;
  for (const [name, value] of sortedSecrets(secrets)) {
    if (result.includes(value)) result = result.split(value).join(secretPlaceholder(name));
  }
  return result;
}

/**
 * {@link redactSecrets} applied to every string of a JSON value, object keys included, at any
 * depth. Returns a new value (the input is not changed); non-string scalars are kept as they
 * are. Working on the parsed value rather than its JSON text also catches a value that
 * JSON escaping would disguise (one holding `"` or `\`).
 */
export function redactSecretsDeep(value: unknown, secrets: SecretValues): unknown {
  if (sortedSecrets(secrets).length === 0) return value;
  const walk = (item: unknown): unknown => {
    if (typeof item === 'string') return redactSecrets(item, secrets);
    if (Array.isArray(item)) return item.map(walk);
    if (item !== null && typeof item === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(item)) {
        // defineProperty, not assignment: a "__proto__" key (JSON.parse makes it an own key) stays data.
        Object.defineProperty(out, redactSecrets(key, secrets), { value: walk(inner), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    return item;
  };
  return walk(value);
}

/** Non-empty secrets, longest value first. */
function sortedSecrets(secrets: SecretValues): Array<[string, string]> {
  return Object.entries(secrets)
    .filter(([, value]) => value.length > 0)
    .sort(([, a], [, b]) => b.length - a.length);
}
