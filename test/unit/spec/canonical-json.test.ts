import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/spec/index.js';
import { canonicalRefJson } from '../../../src/ref/index.js';
import { requestFingerprint } from '../../../src/harness/coordinator/dispatch-request.js';
import { evaluationHash } from '../../../src/producer/evaluation-cache.js';

// Pinned texts and hashes, computed before canonicalJson replaced the copies of it in
// dispatch-request.ts, canonical-ref-json.ts and check-drafts.ts: a change here changes what
// kept answers, the evaluation cache and stored source fingerprints are found by.
describe('canonicalJson: the one canonical JSON of fingerprints and cache keys', () => {
  it('sorts keys at every level by code units, leaves out undefined values and writes undefined array items as null', () => {
    expect(canonicalJson({ b: [3, { d: 1, c: null }], a: 'x', u: undefined, n: -0, '10': 1, '9': 2 })).toBe('{"10":1,"9":2,"a":"x","b":[3,{"c":null,"d":1}],"n":0}');
    expect(canonicalJson([undefined, 'é\n', 1.5e-7])).toBe('[null,"é\\n",1.5e-7]');
    expect(canonicalJson('plain')).toBe('"plain"');
  });

  it("normalize rewrites each object before it is written, and the objects it returns are walked", () => {
    const tagged = (object: Record<string, unknown>): Record<string, unknown> => ({ ...object, seen: true });
    expect(canonicalJson({ z: { y: 1 } }, tagged)).toBe('{"seen":true,"z":{"seen":true,"y":1}}');
  });

  it('keeps the request fingerprint of a dispatch', () => {
    const request = { scenario: { prompt: 'two plus two', judge: { $ref: 'pkg:judge' }, tags: ['a', 'b'], n: 1.5, nested: { z: null, a: true } }, cellId: 'c', runAttemptId: 'r', rep: 2, seed: 7 };
    expect(requestFingerprint(request)).toBe('f327992ab51fb28632f8260475e4f5501310da1c8534555e777ab45975c1da6b');
    expect(requestFingerprint({ ...request, generation: 3, cycleId: 'cy' })).toBe('be24cf13c51e6b0b229378727a18bc5712dba34a355fe6f79fefaa8de373e4ee');
    expect(requestFingerprint({ ...request, scenario: { '10': 1, '9': 2, b: 3 } })).toBe('042bdb41155fff6fd4b428ba7082153bda92d0d1ab1d19c91c0d79ec92519a36');
  });

  it("keeps a Ref's canonical JSON (defaults filled in nested Refs too) and an evaluation's hash", () => {
    expect(canonicalRefJson({ config: { z: 1, a: { $ref: 'pkg:inner' }, list: [1, 'x'] }, $ref: 'pkg:outer' } as never))
      .toBe('{"$ref":"pkg:outer","call":true,"config":{"a":{"$ref":"pkg:inner","call":true,"config":{}},"list":[1,"x"],"z":1}}');
    const spec = { rendered: 'hello', task: { id: 't1', q: 'why', meta: { b: 2, a: 1 } }, run: { $ref: 'pkg:run', config: { m: 'x' } }, reward: { $ref: 'pkg:reward', call: false } };
    expect(evaluationHash(spec as never)).toBe('e08ccfef5653804ee0913f2ad87162fdd2bfa58dcfcb46a55f850ee3a75676f1');
    // Issue 28: the gold fields count only where they change what the run sees, as a set.
    expect(evaluationHash({ ...spec, goldKeys: [], goldVisibleToRun: false } as never)).toBe('e08ccfef5653804ee0913f2ad87162fdd2bfa58dcfcb46a55f850ee3a75676f1');
    const visible = evaluationHash({ ...spec, goldVisibleToRun: true } as never);
    const kept = evaluationHash({ ...spec, goldKeys: ['q', 'meta'] } as never);
    expect(new Set([visible, kept, 'e08ccfef5653804ee0913f2ad87162fdd2bfa58dcfcb46a55f850ee3a75676f1']).size).toBe(3);
    expect(evaluationHash({ ...spec, goldKeys: ['meta', 'q', 'q'] } as never)).toBe(kept);
  });

  it('orders array-index keys of a Ref by code units as every other key (they came in numeric order before)', () => {
    expect(canonicalRefJson({ $ref: 'p:x', config: { '10': 1, '9': 2, b: 3 } } as never)).toBe('{"$ref":"p:x","call":true,"config":{"10":1,"9":2,"b":3}}');
  });
});
