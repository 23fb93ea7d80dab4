// The rollout child checks receipts without zod (checkCostReceipt): it must accept exactly what
// CostReceiptSchema accepts, and give the same receipt.
import { describe, expect, it } from 'vitest';
import { checkCostReceipt } from '../../../src/spec/cost-receipt-check.js';
import { CallerError, CostReceiptSchema } from '../../../src/spec/index.js';
import { classifyError } from '../../../src/consumer/classify.js';

class Instance {
  id = 'a';
  usd = 1;
}

const cases: Array<[string, unknown]> = [
  ['minimal', { id: 'a', usd: 0 }],
  ['negative zero', { id: 'a', usd: -0 }],
  ['all fields', { id: 'call-1', usd: 0.25, label: 'gpt', units: { inputTokens: 1200, outputTokens: 3 } }],
  ['label undefined', { id: 'a', usd: 1, label: undefined }],
  ['empty units', { id: 'a', usd: 1, units: {} }],
  ['null-prototype units', { id: 'a', usd: 1, units: Object.assign(Object.create(null) as object, { x: 1 }) }],
  ['class instance', new Instance()],
  ['fields on the prototype', Object.create({ id: 'p', usd: 1 }) as object],
  ['longest id and label', { id: 'i'.repeat(256), usd: 1, label: 'l'.repeat(256) }],
  ['empty id', { id: '', usd: 1 }],
  ['id too long', { id: 'i'.repeat(257), usd: 1 }],
  ['label too long', { id: 'a', usd: 1, label: 'l'.repeat(257) }],
  ['label null', { id: 'a', usd: 1, label: null }],
  ['id a number', { id: 1, usd: 1 }],
  ['usd missing', { id: 'a' }],
  ['usd negative', { id: 'a', usd: -0.01 }],
  ['usd infinite', { id: 'a', usd: Infinity }],
  ['usd NaN', { id: 'a', usd: NaN }],
  ['usd a string', { id: 'a', usd: '1' }],
  ['usd a bigint', { id: 'a', usd: 1n }],
  ['unknown field', { id: 'a', usd: 1, extra: 1 }],
  ['unknown field undefined', { id: 'a', usd: 1, extra: undefined }],
  ['units an array', { id: 'a', usd: 1, units: [] }],
  ['units null', { id: 'a', usd: 1, units: null }],
  ['units a Map', { id: 'a', usd: 1, units: new Map() }],
  ['units a Date', { id: 'a', usd: 1, units: new Date(0) }],
  ['units infinite value', { id: 'a', usd: 1, units: { x: Infinity } }],
  ['units string value', { id: 'a', usd: 1, units: { x: '1' } }],
  ['units symbol key', { id: 'a', usd: 1, units: { [Symbol('s')]: 1 } }],
  ['paidCall: the harness fields', { id: 'c', usd: 0.01, label: 'm', units: { inputTokens: 1, outputTokens: 2 }, paidCall: { channel: 'agent', actor: 'solver', phase: 'p', model: 'm', timestamp: 1, costUnknown: false, usageUnknown: false, actualCostUsd: 0.01, error: 'e', tags: { a: 'b' } } }],
  ['paidCall: custom pricing', { id: 'c', usd: 0, paidCall: { channel: 'judge', actor: 'a', model: 'm', timestamp: 0, costUnknown: false, customTokenPricing: { inputUsdPerMillion: 1, outputUsdPerMillion: 2, cachedInputUsdPerMillion: 0.5 } } }],
  ['paidCall: optional undefined', { id: 'c', usd: 0, paidCall: { channel: 'agent', actor: 'a', model: 'm', timestamp: 0, costUnknown: true, phase: undefined, error: undefined } }],
  ['paidCall: missing model', { id: 'c', usd: 0, paidCall: { channel: 'agent', actor: 'a', timestamp: 0, costUnknown: true } }],
  ['paidCall: empty actor', { id: 'c', usd: 0, paidCall: { channel: 'agent', actor: '', model: 'm', timestamp: 0, costUnknown: true } }],
  ['paidCall: fractional timestamp', { id: 'c', usd: 0, paidCall: { channel: 'agent', actor: 'a', model: 'm', timestamp: 1.5, costUnknown: true } }],
  ['paidCall: costUnknown a string', { id: 'c', usd: 0, paidCall: { channel: 'agent', actor: 'a', model: 'm', timestamp: 0, costUnknown: 'no' } }],
  ['paidCall: negative amount', { id: 'c', usd: 0, paidCall: { channel: 'agent', actor: 'a', model: 'm', timestamp: 0, costUnknown: false, actualCostUsd: -1 } }],
  ['paidCall: unknown field', { id: 'c', usd: 0, paidCall: { channel: 'agent', actor: 'a', model: 'm', timestamp: 0, costUnknown: false, extra: 1 } }],
  ['paidCall: pricing without output rate', { id: 'c', usd: 0, paidCall: { channel: 'agent', actor: 'a', model: 'm', timestamp: 0, costUnknown: false, customTokenPricing: { inputUsdPerMillion: 1 } } }],
  ['paidCall: tag not a string', { id: 'c', usd: 0, paidCall: { channel: 'agent', actor: 'a', model: 'm', timestamp: 0, costUnknown: false, tags: { a: 1 } } }],
  ['paidCall: channel too long', { id: 'c', usd: 0, paidCall: { channel: 'c'.repeat(65), actor: 'a', model: 'm', timestamp: 0, costUnknown: false } }],
  ['paidCall null', { id: 'c', usd: 0, paidCall: null }],
  ['null', null],
  ['an array', []],
  ['a string', 'receipt'],
  ['undefined', undefined],
];

describe('checkCostReceipt', () => {
  it.each(cases)('agrees with CostReceiptSchema: %s', (_name, value) => {
    const parsed = CostReceiptSchema.safeParse(value);
    if (parsed.success) {
      expect(JSON.parse(JSON.stringify(checkCostReceipt(value)))).toEqual(JSON.parse(JSON.stringify(parsed.data)));
    } else {
      expect(() => checkCostReceipt(value)).toThrow(CallerError);
    }
  });

  // Fresh-user report: a Dispatch's runPaidCall returning { usd, model, units } ended `model`.
  it('a malformed receipt is a caller error (the recording code is wrong on every rollout), not model', () => {
    let thrown: unknown;
    try {
      checkCostReceipt({ id: 'call-1', usd: undefined, model: 'small' });
    } catch (err) {
      thrown = err;
    }
    expect(classifyError(thrown)).toMatchObject({ kind: 'caller', error: { message: expect.stringContaining('invalid cost receipt') } });
  });

  it('copies units, so a later change by rollout code does not reach the sent receipt', () => {
    const units = { tokens: 1 };
    const receipt = checkCostReceipt({ id: 'a', usd: 1, units });
    units.tokens = 2;
    expect(receipt.units).toEqual({ tokens: 1 });
  });
});
