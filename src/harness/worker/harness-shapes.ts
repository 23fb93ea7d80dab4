/**
 * The evaluation harness' own shapes that cross the Dispatch seam, written from its public
 * contract (its `DispatchContext`, `CampaignTraceWriter`/`TraceSpan`, `CampaignArtifactWriter`,
 * `CampaignCostMeter` and cost-ledger types: `RunPaidCallInput`, `CostReceiptInput`,
 * `CostReceipt`, `PaidCallResult`). rollout-queue imports nothing of the harness: these are
 * structural copies, so the harness' own objects fit them and ours fit the harness'.
 * Built-in layer: no imports.
 */

/** Which budget line a paid call belongs to (the harness' `CostChannel`). */
export type CostChannel = 'agent' | 'judge' | 'verifier' | 'analyst' | 'driver' | (string & {});

/** Token usage of one paid call (the harness' `CostUsage`). */
export interface CostUsage {
  readonly inputTokens: number;
  /** Includes reasoning tokens when the provider bills them as output. */
  readonly outputTokens: number;
  readonly reasoningTokens?: number;
  readonly cachedTokens?: number;
  readonly cacheWriteTokens?: number;
}

/** What a paid call's `receipt(value)` reports (the harness' `CostReceiptInput`): at most one of the three amounts. */
export interface CostReceiptInput extends CostUsage {
  readonly model: string;
  /** Rates per million tokens, for a model the harness has no price for. */
  readonly customTokenPricing?: {
    readonly inputUsdPerMillion: number;
    readonly cachedInputUsdPerMillion?: number;
    readonly cacheWriteUsdPerMillion?: number;
    readonly outputUsdPerMillion: number;
  };
  /** US dollars the provider billed. */
  readonly actualCostUsd?: number;
  /** US dollars an external executor estimated. */
  readonly estimatedCostUsd?: number;
  readonly costUnknown?: boolean;
  readonly usageUnknown?: boolean;
}

/**
 * The one argument of the harness meter's `runPaidCall` (its `RunPaidCallInput`, minus the
 * fields a cell's meter fills in: `phase`, `tags` are optional here as in `CampaignCostMeter`).
 * `execute(signal, callId)` does the paid work; `receipt(value)` prices its value;
 * `receiptFromError(error)` prices a call that failed after paying.
 */
export interface RunPaidCallInput<T> {
  readonly callId?: string;
  readonly channel?: CostChannel;
  readonly phase?: string;
  readonly actor: string;
  /** Used before a receipt exists and for a failure without one. */
  readonly model?: string;
  readonly tags?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
  /** Accepted for the harness' shape; rollout-queue enforces no ceiling per call (the coordinator's ledger does). */
  readonly maximumCharge?: unknown;
  execute(signal: AbortSignal, callId: string): Promise<T>;
  receipt(value: T): CostReceiptInput;
  receiptFromError?(error: Error): CostReceiptInput | undefined;
}

/** A settled paid call as the harness' ledgers keep it (its `CostReceipt`): the `receipts` of `POST /dispatch`. */
export interface HarnessCostReceipt extends CostUsage {
  readonly status: 'settled';
  readonly callId: string;
  readonly channel: CostChannel;
  readonly phase: string;
  readonly actor: string;
  readonly model: string;
  readonly costUsd: number;
  readonly costUnknown: boolean;
  readonly usageUnknown?: boolean;
  readonly pricing?: { readonly inputUsdPerThousand: number; readonly cachedInputUsdPerThousand?: number; readonly cacheWriteUsdPerThousand?: number; readonly outputUsdPerThousand: number };
  readonly actualCostUsd?: number;
  readonly estimatedCostUsd?: number;
  readonly error?: string;
  readonly tags?: Readonly<Record<string, string>>;
  /** Epoch ms when the call started. */
  readonly timestamp: number;
}

/** What the harness meter's `runPaidCall` resolves to (its `PaidCallResult`): it reports a failure, it never throws one. */
export type PaidCallResult<T> =
  | { readonly succeeded: true; readonly callId: string; readonly value: T; readonly receipt: HarnessCostReceipt }
  | { readonly succeeded: false; readonly callId?: string; readonly error: Error; readonly receipt?: HarnessCostReceipt };

/** The harness' cell cost meter (`CampaignCostMeter`): `runPaidCall` is its only method. */
export interface HarnessCostMeter {
  runPaidCall<T>(input: RunPaidCallInput<T>): Promise<PaidCallResult<T>>;
}

/** A span handle as the harness' trace writer returns it (`TraceSpan`). */
export interface DispatchSpanHandle {
  /** Ends the span; `attributes` are added first. A second `end` is ignored. */
  end(attributes?: Readonly<Record<string, unknown>>): void;
  setAttribute(key: string, value: unknown): void;
  setStatus?(status: unknown): void;
  recordException?(error: unknown): void;
  addEvent?(name: string, attributes?: Readonly<Record<string, unknown>>): void;
}

/** The harness' trace writer (`CampaignTraceWriter`): `span(name, attributes)` returns a handle. */
export interface HarnessTraceWriter {
  span(name: string, attributes?: Readonly<Record<string, unknown>>): DispatchSpanHandle;
  flush?(): Promise<void>;
}

/** The harness' artifact writer (`CampaignArtifactWriter`): each write resolves to the file's full path. */
export interface HarnessArtifactWriter {
  write(path: string, content: string | Uint8Array): Promise<string>;
  writeJson(path: string, value: unknown): Promise<string>;
}
