/**
 * sha256Utf8 (the embedding deduplication's digest, Node's one-shot crypto.hash where present) against the reference
 * `createHash('sha256').update(text, 'utf8').digest()`, and against a digest of `Buffer.from(text, 'utf8')`: the same
 * 32 bytes on random strings of every kind of code unit, lone surrogates included.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/score/stats.js';
import { sha256Utf8 } from '../../src/embed/hash.js';

const reference = (t: string): string => createHash('sha256').update(t, 'utf8').digest('hex');

describe('sha256Utf8', () => {
  it('the digest of the empty string and of "abc" (FIPS 180-2 test vector)', () => {
    expect(sha256Utf8('').toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Utf8('abc').toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('equals createHash over UTF-8 on 3,000 random strings (ASCII, BMP, astral, lone surrogates), 32 bytes each', () => {
    const next = seededRandom(25);
    for (let i = 0; i < 3000; i++) {
      const units = Array.from({ length: Math.floor(next() * 300) }, () => {
        const r = next();
        if (r < 0.5) return String.fromCharCode(32 + Math.floor(next() * 95));
        if (r < 0.8) return String.fromCharCode(Math.floor(next() * 0xd800));
        if (r < 0.9) return String.fromCodePoint(0x10000 + Math.floor(next() * 0xfffff));
        return String.fromCharCode(0xd800 + Math.floor(next() * 0x800)); // a lone surrogate, high or low
      });
      const t = units.join('');
      const d = sha256Utf8(t);
      expect(d.length).toBe(32);
      expect(d.toString('hex')).toBe(reference(t));
      expect(d.toString('hex')).toBe(createHash('sha256').update(Buffer.from(t, 'utf8')).digest('hex'));
    }
  });
});
