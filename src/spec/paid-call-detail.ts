import { z } from 'zod';

/**
 * Token counts a receipt may carry in `units`, as the evaluation harness' `CostUsage` names them
 * (its cost-ledger `CostUsage`: `inputTokens`, `outputTokens`, `reasoningTokens`, `cachedTokens`,
 * `cacheWriteTokens`). The first two are required by the harness; a receipt without them counts 0.
 */
export const HARNESS_TOKEN_UNITS = ['inputTokens', 'outputTokens', 'reasoningTokens', 'cachedTokens', 'cacheWriteTokens'] as const;

/** Per-million token rates a paid call priced itself with (the harness' `CustomTokenPricing`). */
export const CustomTokenPricingSchema = z
  .object({
    inputUsdPerMillion: z.number().min(0),
    cachedInputUsdPerMillion: z.number().min(0).optional(),
    cacheWriteUsdPerMillion: z.number().min(0).optional(),
    outputUsdPerMillion: z.number().min(0),
  })
  .strict();
export type CustomTokenPricing = z.infer<typeof CustomTokenPricingSchema>;

/**
 * What the harness' `runPaidCall(input)` knew about one paid call, kept beside a receipt's `usd`
 * so the coordinator can replay the receipt through the harness meter's own `runPaidCall` and
 * its ledger prices it as it would an in-process call (source: the harness' cost-ledger
 * `RunPaidCallInput` / `CostReceiptInput` / `CostReceipt`). Token counts are in the receipt's
 * `units` ({@link HARNESS_TOKEN_UNITS}); the model is also its `label`.
 * - `actualCostUsd`, `estimatedCostUsd`, `customTokenPricing`: at most one, as the Dispatch's
 *   `receipt(value)` gave it; the receipt's `usd` is that amount (custom pricing applied to the
 *   tokens). With none, `usd` is 0 and `costUnknown` true: rollout-queue has no model price list,
 *   the coordinator's ledger prices the tokens by `model`.
 * - `error`: the paid call failed after paying (`receiptFromError`).
 */
export const PaidCallDetailSchema = z
  .object({
    channel: z.string().min(1).max(64).describe("The harness' CostChannel: agent, judge, verifier, analyst, driver, or another name."),
    actor: z.string().min(1).max(256),
    phase: z.string().min(1).max(256).optional(),
    model: z.string().min(1).max(256),
    timestamp: z.number().int().min(0).describe('Epoch ms when the paid call started.'),
    costUnknown: z.boolean(),
    usageUnknown: z.boolean().optional(),
    actualCostUsd: z.number().min(0).optional(),
    estimatedCostUsd: z.number().min(0).optional(),
    customTokenPricing: CustomTokenPricingSchema.optional(),
    error: z.string().max(1024).optional(),
    tags: z.record(z.string().max(64), z.string().max(256)).optional(),
  })
  .strict()
  .meta({ id: 'PaidCallDetail' });
export type PaidCallDetail = z.infer<typeof PaidCallDetailSchema>;
