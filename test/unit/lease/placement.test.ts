import { describe, expect, it } from 'vitest';
import { canonicalPlacement, effectivePlacement, parsePlacementEntry, placementEntryJson, placementQueueName, satisfiesPlacement } from '../../../src/lease/index.js';

describe('placement queues', () => {
  it('one queue per distinct placement, whatever the key order; none is the base queue', () => {
    expect(placementQueueName('rollouts', {})).toBe('rollouts');
    const a = placementQueueName('rollouts', { region: 'eu-west', gpu: 'h100' });
    expect(a).toBe(placementQueueName('rollouts', { gpu: 'h100', region: 'eu-west' }));
    expect(a).toMatch(/^rollouts--p-[0-9a-f]{16}$/);
    expect(a).not.toBe(placementQueueName('rollouts', { region: 'eu-west' }));
    expect(placementQueueName('rollouts', {}, 'evaluation')).toBe('rollouts--e');
    expect(placementQueueName('rollouts', { region: 'eu-west' }, 'evaluation')).toMatch(/^rollouts--e-[0-9a-f]{16}$/);
  });

  it('a fingerprint is a placement label; sandbox.fingerprint wins over a placement label of that name', () => {
    expect(effectivePlacement({ placement: { region: 'x' }, sandbox: { fingerprint: 'sha256:1' } })).toEqual({ region: 'x', fingerprint: 'sha256:1' });
    expect(effectivePlacement({ placement: { fingerprint: 'a' }, sandbox: { fingerprint: 'b' } })).toEqual({ fingerprint: 'b' });
    expect(effectivePlacement({ placement: {} })).toEqual({});
  });

  it('a worker satisfies a placement when every label is equal; extra worker labels do not matter', () => {
    expect(satisfiesPlacement({ region: 'eu-west', gpu: 'h100' }, { region: 'eu-west' })).toBe(true);
    expect(satisfiesPlacement({ region: 'eu-west' }, { region: 'eu-west', gpu: 'h100' })).toBe(false);
    expect(satisfiesPlacement({ region: 'us-east' }, { region: 'eu-west' })).toBe(false);
    expect(satisfiesPlacement({}, {})).toBe(true);
  });

  it('entries round-trip; malformed ones are ignored', () => {
    expect(canonicalPlacement({ b: '2', a: '1' })).toBe('{"a":"1","b":"2"}');
    expect(parsePlacementEntry(placementEntryJson({ b: '2', a: '1' }, 'evaluation'))).toEqual({ labels: { a: '1', b: '2' }, class: 'evaluation' });
    expect(parsePlacementEntry('nope')).toBeUndefined();
    expect(parsePlacementEntry('{"labels":null}')).toBeUndefined();
  });
});
