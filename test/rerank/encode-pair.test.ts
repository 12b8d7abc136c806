import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTinyCrossEncoder, TINY_VOCAB } from '../../scripts/build-tiny-model.js';
import {
  encodePair,
  encodePairFast,
  hasFastPairPath,
  questionTokensOf,
  type PairTokenizer,
} from '../../src/rerank/transformers.js';

let root: string;
let tokenizer: PairTokenizer;
beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rs-pair-'));
  const dir = (await buildTinyCrossEncoder(path.join(root, 'tiny-ce'))).dir;
  const tf = (await import('@huggingface/transformers')) as unknown as {
    AutoTokenizer: { from_pretrained(id: string, o: Record<string, unknown>): Promise<PairTokenizer> };
  };
  tokenizer = await tf.AutoTokenizer.from_pretrained(dir, { local_files_only: true });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const fast = (q: string, c: string, max: number | null) => encodePairFast(tokenizer, questionTokensOf(tokenizer, q), c, max);

describe('pair encoding: the one-tokenisation path equals the reference (tokenizer pair call + locate)', () => {
  it('transformers.js 3.8 exposes the internals the fast path uses', () => {
    expect(hasFastPairPath(tokenizer)).toBe(true);
  });

  it('untruncated pairs equal the tokenizer\'s own tokenizer(question, { text_pair }) output', () => {
    const e = tokenizer('how do i', { text_pair: 'reset the router', add_special_tokens: true, return_tensor: false, return_token_type_ids: true });
    expect(fast('how do i', 'reset the router', 64)).toEqual({ ids: e.input_ids, types: e.token_type_ids, truncated: false, questionTruncated: false, tailCut: false });
  });

  it('worked cases: chunk cut, question cut, empty chunk with a long question, no limit', () => {
    const cases: [string, string, number | null][] = [
      ['how do i reset the router', 'a b c d e a b c d e', 12],
      ['how do i reset the router', 'a b', 8],
      ['how do i reset the router a b c', '', 6],
      ['hello', 'world unknownword pump seal kit', null],
      ['Hello, World.', 'pump-seal kit? kits', 7],
    ];
    for (const [q, c, max] of cases) expect(fast(q, c, max)).toEqual(encodePair(tokenizer, q, c, max));
    expect(fast('how do i reset the router a b c', '', 6).ids).toHaveLength(6);
  });

  it('property: equal on random word sequences and max lengths, and never longer than the max length', () => {
    const word = fc.constantFrom(...TINY_VOCAB.slice(5).filter((w) => !w.startsWith('##')), 'zzz', 'kits', 'Hello');
    const text = fc.array(word, { minLength: 0, maxLength: 20 }).map((w) => w.join(' '));
    fc.assert(
      fc.property(text, text, fc.integer({ min: 4, max: 30 }), (q, c, max) => {
        const f = fast(q, c, max);
        expect(f).toEqual(encodePair(tokenizer, q, c, max));
        expect(f.ids.length).toBeLessThanOrEqual(max);
      }),
      { numRuns: 300 },
    );
  });
});
