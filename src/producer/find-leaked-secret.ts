/**
 * Names of coordinator environment variables that hold secrets by convention:
 * `*_KEY`, `*_TOKEN`, `*_SECRET`, anything with `PASSWORD` (case-insensitive).
 */
export const SECRET_NAME = /(_KEY|_TOKEN|_SECRET)$|PASSWORD/i;

/** Shortest value of a secret-looking variable that is searched for (shorter ones match by accident). */
export const MIN_SECRET_CHARS = 8;

/** Shortest value of a variable named in `sandbox.env` that is searched for; "1" or "yes" would match anything. */
export const MIN_SANDBOX_ENV_CHARS = 4;

/** A value searched for: the variable's name, its raw value and its JSON-escaped form. */
interface Candidate {
  readonly name: string;
  readonly value: string;
  readonly escaped: string;
}

function candidate(name: string, value: string): Candidate {
  return { name, value, escaped: JSON.stringify(value).slice(1, -1) };
}

/**
 * Finds coordinator secret values in serialized specs. A spec must carry secret names
 * (`sandbox.env`), never values: job data sits in Redis in clear text and shows in dashboards
 * (BullMQ docs, "going to production: protecting data").
 *
 * Checked values: every variable named in the spec's `sandbox.env` that is set here
 * (≥ {@link MIN_SANDBOX_ENV_CHARS} chars), and every variable whose name looks secret
 * ({@link SECRET_NAME}, ≥ {@link MIN_SECRET_CHARS} chars). Both the raw and the JSON-escaped
 * form of a value are searched. Never returns or logs the value itself.
 *
 * The environment is read when the scan is made (the secret-looking variables) or first asked
 * for a name (a `sandbox.env` one), not per spec: make one scan per batch of drafts, so a
 * variable set meanwhile counts from the next batch on.
 */
export class SecretScan {
  private readonly named: readonly Candidate[];
  /** `sandbox.env` names looked up so far: their candidate, or null when unset or too short. */
  private readonly listed = new Map<string, Candidate | null>();

  /** @param env the coordinator's environment (default `process.env`). */
  constructor(private readonly env: NodeJS.ProcessEnv = process.env) {
    const named: Candidate[] = [];
    // Names first: each read of a process.env value crosses into the runtime (Object.entries
    // reads them all, ~3× the time of reading only the secret-looking ones).
    for (const name of Object.keys(env)) {
      if (!SECRET_NAME.test(name)) continue;
      const value = env[name];
      if (value !== undefined && value.length >= MIN_SECRET_CHARS) named.push(candidate(name, value));
    }
    this.named = named;
  }

  /**
   * The NAME of the first checked variable whose value appears in `specJson`, or undefined.
   * @param specJson `JSON.stringify` of the spec as it would be enqueued.
   * @param sandboxEnv the spec's `sandbox.env` names.
   */
  find(specJson: string, sandboxEnv: readonly string[]): string | undefined {
    for (const name of sandboxEnv) {
      const found = this.listedCandidate(name);
      if (found && contains(specJson, found)) return name;
    }
    for (const found of this.named) if (contains(specJson, found)) return found.name;
    return undefined;
  }

  private listedCandidate(name: string): Candidate | null {
    let found = this.listed.get(name);
    if (found === undefined) {
      const value = this.env[name];
      found = value !== undefined && value.length >= MIN_SANDBOX_ENV_CHARS ? candidate(name, value) : null;
      this.listed.set(name, found);
    }
    return found;
  }
}

function contains(json: string, { value, escaped }: Candidate): boolean {
  return json.includes(value) || (escaped !== value && json.includes(escaped));
}
