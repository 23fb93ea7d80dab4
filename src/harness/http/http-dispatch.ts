import { context, propagation } from '@opentelemetry/api';
import type { DispatchContext, DispatchCost } from '../worker/dispatch-types.js';
import type { HarnessCostReceipt } from '../worker/harness-shapes.js';
import { receiptInputFromHarness } from '../worker/receipt-forms.js';
import { replayIntoTrace } from '../worker/trace-replay.js';
import { FINAL_HEADER, type DispatchResponseBody } from './wire.js';

/**
 * Options of {@link httpDispatch}: the harness' `HttpDispatchOptions` (its distributed-driver
 * page and `adapters/http`), same names, same defaults.
 */
export interface HttpDispatchOptions {
  /** The gateway's `POST /dispatch` URL, e.g. `https://gw.example/dispatch`. Exactly one of `url` and `resolveUrl`. */
  readonly url?: string;
  /** The URL per cell, from the harness' placement key (`cellPlacement`): multi-region fan-out over several gateways. */
  readonly resolveUrl?: (input: { readonly scenario: unknown; readonly placement?: string; readonly cellId: string }) => string;
  /** Bearer token (sent as `Authorization: Bearer <token>`), or a function returning one (rotation). */
  readonly auth?: string | (() => string | Promise<string>);
  /** Extra headers on every request. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Per request (each try), ms. Default 300 000 (5 min). */
  readonly timeoutMs?: number;
  /** Retries after the first try, on 5xx / 408 / 429 and lost connections, never on another 4xx, a final answer, or the caller's abort. Default 2. */
  readonly retries?: number;
  /** fetch to use. Default the global `fetch`. */
  readonly fetchImpl?: typeof fetch;
}

/** What a failed `httpDispatch` call throws: the status and the gateway's error, as data. */
export class HttpDispatchError extends Error {
  constructor(
    message: string,
    /** HTTP status; undefined when no answer came (the connection failed on every try). */
    readonly status: number | undefined,
    /** The gateway's error type (`RedispatchLimit`, `WrongAnswer`, `BodyTooLarge`, …). */
    readonly type: string | undefined,
    /** The Result kind of a dispatch that ran: `model`, `infrastructure`, `caller`. */
    readonly kind: DispatchResponseBody['kind'] | undefined,
    /** Set when the plane had already spent the cell's re-dispatch budget: the same cell attempt always answers this. */
    readonly final: DispatchResponseBody['final'] | undefined,
    /** Requests made. */
    readonly tries: number,
  ) {
    super(message);
    this.name = 'HttpDispatchError';
  }
}

/** Receipts replayed per caller meter: `runAttemptId`, `cellId`, `callId` (a retried call's answer carries the same receipts). */
const replayed = new WeakMap<object, Set<string>>();

/** Replays the receipts of an answer through the caller's meter (the harness' `runPaidCall(input)`, else `record`), once per callId of the cell. */
async function replayReceipts(body: DispatchResponseBody, ctx: DispatchContext): Promise<void> {
  const cost: DispatchCost | undefined = ctx.cost;
  const receipts = body.receipts ?? [];
  if (!cost || receipts.length === 0) return;
  let seen = replayed.get(cost);
  if (!seen) replayed.set(cost, (seen = new Set()));
  for (const receipt of receipts as HarnessCostReceipt[]) {
    const key = `${ctx.runAttemptId}\n${ctx.cellId}\n${receipt.callId}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const observed = receiptInputFromHarness(receipt);
    if (typeof cost.runPaidCall === 'function') {
      await cost.runPaidCall({
        callId: receipt.callId, channel: receipt.channel, actor: receipt.actor, model: receipt.model,
        ...(receipt.tags ? { tags: { ...receipt.tags } } : {}),
        execute: async () => {
          if (receipt.error !== undefined) throw new Error(receipt.error);
          return observed;
        },
        receipt: (value) => value,
        receiptFromError: () => observed,
      });
    } else if (typeof cost.record === 'function') {
      await cost.record({ callId: receipt.callId, usd: receipt.costUsd, label: receipt.model, units: { inputTokens: receipt.inputTokens, outputTokens: receipt.outputTokens } });
    }
  }
}

/** Writes the answer's files through `ctx.artifacts.write` and replays its spans into `ctx.trace` (the harness' handle form, or the callback form). */
async function deliverExtras(body: DispatchResponseBody, ctx: DispatchContext): Promise<void> {
  const binary = new Set(body.binary ?? []);
  if (ctx.artifacts) for (const [file, text] of Object.entries(body.files ?? {})) await ctx.artifacts.write(file, binary.has(file) ? new Uint8Array(Buffer.from(text, 'base64')) : text);
  replayIntoTrace(body.spans ?? [], ctx.trace);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

/**
 * The harness' `httpDispatch` for rollout-queue's gateway, for a coordinator without Redis access:
 * `httpDispatch(options)` returns a `Dispatch` that POSTs `{ scenario, cellId, runAttemptId, rep,
 * generation, seed, placement, cycleId }` with a bearer token, and resolves to the answer's
 * `artifact`. As the harness' client: `ctx.signal` aborts the request and is never retried;
 * 5xx / 408 / 429 and lost connections are retried `retries` times with back-off 2^try × 200 ms +
 * up to 200 ms of jitter; another 4xx is thrown at once. What the gateway adds:
 * - every answer's `receipts` (also of a failed dispatch) replay through `ctx.cost.runPaidCall`
 *   (the harness' meter), once per callId of the cell however often the call is retried;
 * - a retry is idempotent: the gateway keys the lease by `(runAttemptId, cellId)`, and an answer
 *   marked `final` (the cell already ran its re-dispatch budget) is thrown at once, not retried;
 * - files and spans of the dispatch reach `ctx.artifacts.write` and `ctx.trace`;
 * - the active OpenTelemetry context goes along as `traceparent`.
 * @throws Error synchronously unless exactly one of `url` and `resolveUrl` is given.
 * The returned Dispatch throws {@link HttpDispatchError} for an answer that is not 2xx.
 */
export function httpDispatch(options: HttpDispatchOptions): (scenario: unknown, ctx: DispatchContext) => Promise<unknown> {
  if ((options.url === undefined) === (options.resolveUrl === undefined)) throw new Error('httpDispatch: pass exactly one of `url` and `resolveUrl`');
  const timeoutMs = options.timeoutMs ?? 300_000;
  const retries = options.retries ?? 2;
  const fetchImpl = options.fetchImpl ?? ((...args: Parameters<typeof fetch>) => fetch(...args));
  return async (scenario, ctx) => {
    const placement = typeof ctx.placement === 'string' ? ctx.placement : undefined;
    const url = options.url ?? (options.resolveUrl as NonNullable<HttpDispatchOptions['resolveUrl']>)({ scenario, ...(placement !== undefined ? { placement } : {}), cellId: ctx.cellId });
    const token = typeof options.auth === 'function' ? await options.auth() : options.auth;
    const body = JSON.stringify({ scenario, cellId: ctx.cellId, runAttemptId: ctx.runAttemptId, rep: ctx.rep, generation: ctx.generation, seed: ctx.seed, placement: ctx.placement, cycleId: ctx.cycleId });
    const trace: Record<string, string> = {};
    propagation.inject(context.active(), trace);
    const headers = {
      'content-type': 'application/json',
      ...trace,
      ...(token ? { authorization: token.startsWith('Bearer ') ? token : `Bearer ${token}` } : {}),
      ...options.headers,
    };
    let lastError: unknown;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await sleep(2 ** (attempt - 1) * 200 + Math.random() * 200);
      if (ctx.signal?.aborted) throw ctx.signal.reason ?? new Error('aborted');
      const signal = ctx.signal ? AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
      let response: Response;
      let answer: DispatchResponseBody;
      try {
        response = await fetchImpl(url, { method: 'POST', headers, body, signal });
        const text = await response.text();
        try {
          answer = JSON.parse(text) as DispatchResponseBody;
        } catch {
          answer = { error: { type: 'NotJson', message: text.slice(0, 500) } };
        }
      } catch (err) {
        if (ctx.signal?.aborted) throw err;
        lastError = err;
        continue;
      }
      await replayReceipts(answer, ctx);
      if (response.ok) {
        await deliverExtras(answer, ctx);
        return answer.artifact;
      }
      const final = answer.final ?? (response.headers.get(FINAL_HEADER) !== null ? { executions: 0, keptUntilMs: 0 } : undefined);
      const retryable = (response.status >= 500 || response.status === 408 || response.status === 429) && final === undefined;
      lastError = new HttpDispatchError(`httpDispatch ${url} failed (${response.status}): ${answer.error?.type ?? 'Error'}: ${answer.error?.message ?? ''}`, response.status, answer.error?.type, answer.kind, final, attempt + 1);
      if (!retryable) throw lastError;
    }
    if (lastError instanceof HttpDispatchError) throw lastError;
    throw new HttpDispatchError(`httpDispatch ${url}: no answer after ${retries + 1} tries: ${(lastError as Error)?.message ?? lastError}`, undefined, undefined, undefined, undefined, retries + 1);
  };
}
