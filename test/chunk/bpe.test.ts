/**
 * Differential test of our cl100k byte-pair encoding of one pre-token (`src/chunk/bpe.ts`) against js-tiktoken
 * 1.0.21's `encode(pre, [], [])`: the same ids on every distinct pre-token of SciFact and the TREC-DL slice
 * (../shared/datasets, skipped when absent), on the pre-tokens of random strings rich in edge cases, and on random
 * long single pre-tokens (letter and symbol runs: many merges, bytes that merge with nothing, lone surrogates).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';
import { describe, expect, it } from 'vitest';
import { cl100kEncodePreToken } from '../../src/chunk/bpe.js';
import { regexPreTokens, scanPreTokens } from '../../src/chunk/pretokens.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const corpora = ['scifact', 'trec-dl-2019-5k'].map((name) => path.resolve(repoRoot, '../shared/datasets', name, 'corpus.jsonl'));
const reference = new Tiktoken(cl100kBase);

describe('cl100kEncodePreToken: js-tiktoken ids without js-tiktoken', () => {
  it('a pre-token that is one token, one that merges, repeated bytes (leftmost pair first on ties)', () => {
    for (const pre of [' hello', 'Hello', ' antidisestablishmentarianism', 'aaaaaaa', ' zzzzzzzzzzzz', '日本語', '😀', '\ud83d', '']) {
      expect(cl100kEncodePreToken(pre)).toEqual(reference.encode(pre, [], []));
    }
    // Every id decodes back to the pre-token's bytes.
    expect(reference.decode(cl100kEncodePreToken(' antidisestablishmentarianism'))).toBe(' antidisestablishmentarianism');
  });

  it('property: equal ids on the pre-tokens of 2,000 random strings of edge cases', () => {
    const piece = fc.constantFrom(
      ...["'s", "'LL", 'word', ' Word', 'e\u0301', '日本', '\u{1D400}', '1234567', ' ', '   ', '\t', '\r\n', '\u00a0', '\u3000'],
      ...['...', '--', '<|endoftext|>', '€', '😀', '👍🏽', '🇫🇷', '\ud83d', '\ude00', 'aaaa', 'zzzz', 'xq', 'qx'],
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 16 }), (parts) => {
        for (const pre of scanPreTokens(parts.join(''))) expect(cl100kEncodePreToken(pre)).toEqual(reference.encode(pre, [], []));
      }),
      { numRuns: 2000 },
    );
  });

  it('property: equal ids on 1,000 long single pre-tokens (letter runs, symbol runs: many merges, unmergeable bytes)', () => {
    const letters = fc.array(fc.constantFrom('a', 'q', 'x', 'z', 'E', 'é', 'ж', 'ß', '日', 'の', '\u{1D400}', 'ǅ'), { minLength: 1, maxLength: 40 });
    const symbols = fc.array(fc.constantFrom('!', '#', '~', '€', '©', '😀', '\u0301', '\ud83d', '\ude00', '\u0000'), { minLength: 1, maxLength: 30 });
    const pre = fc.oneof(
      fc.tuple(fc.constantFrom('', ' ', '.', '\t'), letters).map(([lead, l]) => lead + l.join('')),
      fc.tuple(fc.constantFrom('', ' '), symbols, fc.constantFrom('', '\n', '\r\n')).map(([lead, o, nl]) => lead + o.join('') + nl),
    );
    fc.assert(
      fc.property(pre, (s) => {
        expect(regexPreTokens(s)).toEqual([s]); // the premise: one pre-token, as js-tiktoken's encode will cut it
        expect(cl100kEncodePreToken(s)).toEqual(reference.encode(s, [], []));
      }),
      { numRuns: 1000 },
    );
  });
});

describe.each(corpora)('every distinct pre-token of %s', (file) => {
  it.skipIf(!existsSync(file))('has the ids js-tiktoken gives it', () => {
    const distinct = new Set<string>();
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      const o = JSON.parse(line) as { title?: string; text: string };
      for (const pre of scanPreTokens(o.title ? `${o.title}\n\n${o.text}` : o.text)) distinct.add(pre);
    }
    expect(distinct.size).toBeGreaterThan(10_000);
    let differing = 0;
    for (const pre of distinct) if (cl100kEncodePreToken(pre).join() !== reference.encode(pre, [], []).join()) differing++;
    expect(differing).toBe(0);
  });
});
