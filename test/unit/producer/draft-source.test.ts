import { describe, expect, it } from 'vitest';
import { DraftSource } from '../../../src/producer/draft-source.js';

describe('DraftSource.putBack', () => {
  it('hands drafts taken back: next() and takeReady() return them first, in order, then the rest of the source', async () => {
    const source = new DraftSource(['a', 'b', 'c', 'd']);
    const first = await source.next();
    const taken = [first.value, ...(await source.takeReady(2))];
    expect(taken).toEqual(['a', 'b', 'c']);
    source.putBack(taken);
    expect(await source.next()).toEqual({ done: false, value: 'a' });
    expect(await source.takeReady(1)).toEqual(['b']);
    expect(await source.takeReady(10)).toEqual(['c', 'd']);
    expect((await source.next()).done).toBe(true);
  });

  it('drafts taken before a source error come back before the error is thrown', async () => {
    async function* failing(): AsyncGenerator<string> {
      yield 'a';
      yield 'b';
      throw new Error('source broke');
    }
    const source = new DraftSource(failing());
    const first = await source.next();
    const taken = [first.value, ...(await source.takeReady(5))];
    expect(taken).toEqual(['a', 'b']);
    source.putBack(taken);
    expect(await source.next()).toEqual({ done: false, value: 'a' });
    expect(await source.takeReady(5)).toEqual(['b']);
    await expect(source.next()).rejects.toThrow('source broke');
  });
});
