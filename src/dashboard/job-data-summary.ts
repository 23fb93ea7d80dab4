/**
 * What the dashboard shows of a job's data and return value. A rollout job carries the task
 * and the rendered artifact, which can be large, proprietary or hold data that must not be
 * shown; the dashboard shows their shape instead. The summary is built from known fields only
 * (an allowlist), so a malformed job written by another client cannot smuggle values through,
 * and `sandbox.env` shows variable names only, never values.
 */
import { EnvNameSchema, StoredRenderedSchema, type StoredRendered } from '../spec/index.js';

/** Keys whose values are never shown, at any depth of a Ref config or a return value. */
const SECRET_KEY = /pass(word)?|secret|token|api[-_]?key|auth|credential|private[-_]?key|cookie|^env$/i;
/** Longest string shown as is, in characters. */
const MAX_STRING = 200;
/** Deepest level of a Ref config or a return value shown. */
const MAX_DEPTH = 4;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const byteLength = (value: unknown): number => {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  } catch {
    return 0;
  }
};

/** `value` with long strings cut, secret-looking keys censored, and depth capped. */
export function shortValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}… (${value.length} chars)` : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return Array.isArray(value) ? `[array of ${value.length}]` : '{…}';
  if (Array.isArray(value)) {
    const shown = value.slice(0, 20).map((item) => shortValue(item, depth + 1));
    return value.length > 20 ? [...shown, `… ${value.length - 20} more`] : shown;
  }
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = SECRET_KEY.test(key) ? '[redacted]' : shortValue(item, depth + 1);
  return out;
}

/** A task as `{ id, fields, bytes }`: which fields it has, never their values. */
export function summarizeTask(task: unknown): unknown {
  if (!isRecord(task)) return { type: task === null ? 'null' : Array.isArray(task) ? 'array' : typeof task, bytes: byteLength(task) };
  const id = typeof task.id === 'string' || typeof task.id === 'number' ? task.id : undefined;
  return { ...(id !== undefined ? { id: shortValue(id) } : {}), fields: Object.keys(task).slice(0, 50), bytes: byteLength(task) };
}

/** Hex digits of a stored artifact's hash shown: enough to tell a run's artifacts apart at a glance. */
const SHOWN_HASH_CHARS = 12;

/**
 * A stored artifact's reference as `{ kind: 'stored', bytes, sha256, note }`: `bytes` is the
 * size in bytes of the artifact's UTF-8 JSON text (a string artifact quoted and escaped, so not
 * its file's size on disk: fresh-user report), from the reference, `sha256` the hash's first 12
 * hex digits and `…`, `note` a sentence saying where the artifact is. Pure: the dashboard never
 * reads the run's artifact from Redis, so no file list is shown.
 */
function summarizeStoredRendered(ref: StoredRendered): unknown {
  return {
    kind: 'stored',
    bytes: ref.bytes,
    sha256: `${ref.sha256.slice(0, SHOWN_HASH_CHARS)}…`,
    // A stored artifact may be one string as well as files; the dashboard cannot tell which.
    note: "the artifact's JSON text (a string in quotes, or its files) is stored once per run in Redis; bytes and sha256 are of that text",
  };
}

/**
 * A rendered artifact as its size (a string: `{ kind: 'string', chars }`), its file list and
 * size (files: `{ kind: 'files', files, count, bytes }`), or its stored size and hash (the
 * producer's reference for artifacts of 1 KiB or more: see `summarizeStoredRendered`).
 * Anything else is `{ kind: 'unknown', bytes }`, `bytes` being the size of its JSON.
 */
export function summarizeRendered(rendered: unknown): unknown {
  if (typeof rendered === 'string') return { kind: 'string', chars: rendered.length };
  if (isRecord(rendered) && isRecord(rendered.files)) {
    const paths = Object.keys(rendered.files);
    return { kind: 'files', files: paths.slice(0, 50), count: paths.length, bytes: byteLength(rendered.files) };
  }
  // Fresh-user report: the reference showed as `unknown` with the size of its own JSON (90
  // bytes) instead of the artifact's. The schema (strict: exactly `sha256` and `bytes`) is the
  // allowlist, so a malformed reference still shows as `unknown`.
  const stored = StoredRenderedSchema.safeParse(rendered);
  if (stored.success) return summarizeStoredRendered(stored.data);
  return { kind: 'unknown', bytes: byteLength(rendered) };
}

function summarizeRef(ref: unknown): unknown {
  if (!isRecord(ref)) return { invalid: typeof ref };
  return {
    $ref: typeof ref.$ref === 'string' ? shortValue(ref.$ref) : '(invalid)',
    ...(isRecord(ref.config) ? { config: shortValue(ref.config, 1) } : {}),
    ...(typeof ref.call === 'boolean' ? { call: ref.call } : {}),
  };
}

function summarizeSandbox(sandbox: unknown): unknown {
  if (!isRecord(sandbox)) return undefined;
  const names = Array.isArray(sandbox.env) ? sandbox.env.filter((name) => EnvNameSchema.safeParse(name).success) : [];
  return {
    env: names,
    ...(typeof sandbox.memoryMb === 'number' ? { memoryMb: sandbox.memoryMb } : {}),
    ...(typeof sandbox.fingerprint === 'string' ? { fingerprint: shortValue(sandbox.fingerprint) } : {}),
  };
}

/**
 * The dashboard's view of a rollout job's data: ids, Refs (configs with secret-looking keys
 * censored), sandbox (env names only), timeouts, placement, and summaries of `task` and
 * `rendered`. Data that is not an object shows only its type and size.
 */
export function summarizeJobData(data: unknown): unknown {
  if (!isRecord(data)) return { unreadable: data === null ? 'null' : Array.isArray(data) ? 'array' : typeof data, bytes: byteLength(data) };
  const scalar = (key: string): Record<string, unknown> =>
    typeof data[key] === 'string' || typeof data[key] === 'number' ? { [key]: shortValue(data[key]) } : {};
  return {
    ...scalar('v'),
    ...scalar('leaseId'),
    ...scalar('runId'),
    ...scalar('runAttemptId'),
    ...scalar('class'),
    ...('task' in data ? { task: summarizeTask(data.task) } : {}),
    ...('rendered' in data ? { rendered: summarizeRendered(data.rendered) } : {}),
    ...('run' in data ? { run: summarizeRef(data.run) } : {}),
    ...('reward' in data ? { reward: summarizeRef(data.reward) } : {}),
    ...(isRecord(data.sandbox) ? { sandbox: summarizeSandbox(data.sandbox) } : {}),
    ...(isRecord(data.timeouts) ? { timeouts: shortValue(data.timeouts, MAX_DEPTH - 1) } : {}),
    ...(isRecord(data.placement) ? { placement: shortValue(data.placement, MAX_DEPTH - 1) } : {}),
    ...(Array.isArray(data.rewardRange) ? { rewardRange: shortValue(data.rewardRange, MAX_DEPTH - 1) } : {}),
    otherFields: Object.keys(data).filter((key) => !KNOWN_FIELDS.has(key)).slice(0, 20),
  };
}

const KNOWN_FIELDS = new Set(['v', 'leaseId', 'runId', 'runAttemptId', 'class', 'task', 'rendered', 'run', 'reward', 'sandbox', 'timeouts', 'placement', 'rewardRange']);
