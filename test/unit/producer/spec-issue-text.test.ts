import { describe, expect, it } from 'vitest';
import { firstRefusedDraft } from '../../../src/producer/index.js';

const base = { task: { id: 'a' }, run: { $ref: 'pkg:run', config: {} }, reward: { $ref: 'pkg:reward', config: {} } };
const refusal = (draft: Record<string, unknown>): string | undefined => firstRefusedDraft('r', [draft], { maxSpecBytes: 1 << 20, maxTaskBytes: 1 << 18 })?.error.message;

describe('a refused draft names what to write (fresh-user report: "Unrecognized key" with no suggestion, a bare "Invalid input")', () => {
  it('offers the key an unknown one most likely misspells, at the top and nested', () => {
    expect(refusal({ ...base, rendered: 'x', timeout: { runMs: 5 } })).toBe('lease r.a: spec field "(spec)": unknown key "timeout" (did you mean "timeouts"?); fix these fields of the draft (see schema/rollout-spec.json)');
    expect(refusal({ ...base, rendered: 'x', sandbox: { memoryMB: 512 } })).toBe('lease r.a: spec field "sandbox": unknown key "memoryMB" (did you mean "memoryMb"?); fix these fields of the draft (see schema/rollout-spec.json)');
    expect(refusal({ ...base, rendered: 'x', zzz: 1 })).toBe('lease r.a: spec field "(spec)": unknown key "zzz"; fix these fields of the draft (see schema/rollout-spec.json)');
  });

  it('says which types a union of forms takes', () => {
    expect(refusal({ ...base, rendered: 3 })).toBe('lease r.a: spec field "rendered": Invalid input: expected string or object; fix these fields of the draft (see schema/rollout-spec.json)');
  });
});
