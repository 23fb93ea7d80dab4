import { describe, expect, it } from 'vitest';
import { harnessReceiptOf, receiptFromInput, receiptInputFromHarness, receiptInputOf, receiptInputProblem } from '../../../src/harness/worker/receipt-forms.js';
import { CostReceiptSchema } from '../../../src/spec/index.js';

const start = { callId: 'c1', channel: 'agent', actor: 'solver', model: 'm', timestamp: 1_700_000_000_000 };

describe('receipt forms: a paid call across the seam keeps what the harness ledger needs', () => {
  it('an actual amount: usd, tokens in units, the harness receipt, and the same input back for the replay', () => {
    const observed = { model: 'gpt-x', inputTokens: 1000, outputTokens: 200, cachedTokens: 50, actualCostUsd: 0.012 };
    const receipt = receiptFromInput(start, observed);
    expect(CostReceiptSchema.parse(receipt)).toEqual(receipt);
    expect(receipt).toMatchObject({ id: 'c1', usd: 0.012, label: 'gpt-x', units: { inputTokens: 1000, outputTokens: 200, cachedTokens: 50 }, paidCall: { channel: 'agent', actor: 'solver', costUnknown: false, actualCostUsd: 0.012 } });
    expect(receiptInputOf(receipt)).toEqual({ start: { callId: 'c1', channel: 'agent', actor: 'solver', model: 'gpt-x' }, observed });
    const wire = harnessReceiptOf(receipt, 0);
    expect(wire).toEqual({ status: 'settled', callId: 'c1', channel: 'agent', phase: 'dispatch', actor: 'solver', model: 'gpt-x', inputTokens: 1000, outputTokens: 200, cachedTokens: 50, costUsd: 0.012, costUnknown: false, actualCostUsd: 0.012, timestamp: start.timestamp });
    expect(receiptInputFromHarness(wire)).toEqual(observed);
  });

  it('custom per-million pricing is applied on the worker and travels as per-thousand pricing, back to per-million', () => {
    const observed = { model: 'own', inputTokens: 2_000_000, outputTokens: 1_000_000, customTokenPricing: { inputUsdPerMillion: 1, outputUsdPerMillion: 4 } };
    const receipt = receiptFromInput(start, observed);
    expect(receipt.usd).toBe(6);
    const wire = harnessReceiptOf(receipt, 0);
    expect(wire.pricing).toEqual({ inputUsdPerThousand: 0.001, outputUsdPerThousand: 0.004 });
    expect(receiptInputFromHarness(wire)).toEqual(observed);
  });

  it('tokens only: the plane cannot price by model, the replay leaves it to the coordinator ledger', () => {
    const receipt = receiptFromInput(start, { model: 'gpt-4o', inputTokens: 10, outputTokens: 5 });
    expect(receipt).toMatchObject({ usd: 0, paidCall: { costUnknown: true } });
    expect(receiptInputOf(receipt).observed).toEqual({ model: 'gpt-4o', inputTokens: 10, outputTokens: 5 });
    expect(receiptInputFromHarness(harnessReceiptOf(receipt, 0))).toEqual({ model: 'gpt-4o', inputTokens: 10, outputTokens: 5 });
  });

  it("an older receipt (record, runPaidCall(callId, fn)) replays with its usd as the actual amount and its label as the model", () => {
    expect(receiptInputOf({ id: 'x', usd: 0.5, label: 'judge', units: { inputTokens: 3 } })).toEqual({ start: { callId: 'x', channel: 'agent', actor: 'judge', model: 'judge' }, observed: { model: 'judge', inputTokens: 3, outputTokens: 0, actualCostUsd: 0.5 } });
  });

  it('refuses what the harness ledger refuses, naming the field', () => {
    expect(receiptInputProblem({ model: 'm', inputTokens: 1, outputTokens: 1 })).toBeUndefined();
    expect(receiptInputProblem({ inputTokens: 1, outputTokens: 1 })).toMatch(/^model must be/);
    expect(receiptInputProblem({ model: 'm', inputTokens: -1, outputTokens: 1 })).toMatch(/^inputTokens must be a whole number/);
    expect(receiptInputProblem({ model: 'm', inputTokens: 1, outputTokens: 1, reasoningTokens: 2 })).toMatch(/reasoningTokens must not exceed/);
    expect(receiptInputProblem({ model: 'm', inputTokens: 1, outputTokens: 1, actualCostUsd: 1, estimatedCostUsd: 1 })).toMatch(/only one of/);
    expect(receiptInputProblem({ model: 'm', inputTokens: 1, outputTokens: 1, actualCostUsd: 1, costUnknown: true })).toMatch(/costUnknown: true cannot go with an amount/);
    expect(receiptInputProblem(null)).toMatch(/expected an object/);
  });
});
