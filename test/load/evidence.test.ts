import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { locateQuote, normaliseWhitespace, normaliseWithMap } from '../../src/load/evidence.js';

describe('normaliseWhitespace', () => {
  it('collapses every run of whitespace (tabs, newlines, NBSP) into one space and trims', () => {
    expect(normaliseWhitespace('  a \n\t b\u00a0\u00a0c\r\n')).toBe('a b c');
  });

  it('map points every normalised code unit at the raw code unit it came from', () => {
    const raw = 'ab  \n cd';
    const n = normaliseWithMap(raw);
    expect(n.text).toBe('ab cd');
    // a->0, b->1, the collapsed run starts at 2, c->6, d->7
    expect([...n.map]).toEqual([0, 1, 2, 6, 7]);
  });
});

describe('locateQuote', () => {
  it('finds a quote whose whitespace differs from the raw text and returns the raw range', () => {
    const raw = '# Refunds\n\nRefunds are paid\n   within 14 days   of the\nreturn.\n';
    const r = locateQuote(raw, 'Refunds are paid within 14 days of the return.');
    const start = raw.indexOf('Refunds are');
    const end = raw.indexOf('return.') + 'return.'.length;
    expect(r).toEqual({ start, end });
  });

  it('range starts at the first and ends after the last non-whitespace character of the quote', () => {
    const raw = 'x  hello   world  y';
    const r = locateQuote(raw, '  hello world \n');
    expect(r).toEqual({ start: 3, end: 3 + 'hello   world'.length });
  });

  it('absent quote reports absent with count 0', () => {
    expect(locateQuote('abc def', 'xyz')).toEqual({ error: 'absent', count: 0 });
  });

  it('a quote found twice without occurrence is ambiguous with the count', () => {
    expect(locateQuote('Contact support. Then Contact  support.', 'Contact support.')).toEqual({ error: 'ambiguous', count: 2 });
  });

  it('occurrence n picks the n-th place in text order (1-based)', () => {
    const raw = 'Contact support. Then Contact\n support.';
    expect(locateQuote(raw, 'Contact support.', 1)).toEqual({ start: 0, end: 16 });
    expect(locateQuote(raw, 'Contact support.', 2)).toEqual({ start: 22, end: raw.length });
  });

  it('occurrence beyond the count is absent with the count actually found', () => {
    expect(locateQuote('aa b aa', 'aa', 3)).toEqual({ error: 'absent', count: 2 });
  });

  it('overlapping occurrences count separately', () => {
    expect(locateQuote('aaa', 'aa')).toEqual({ error: 'ambiguous', count: 2 });
    expect(locateQuote('aaa', 'aa', 2)).toEqual({ start: 1, end: 3 });
  });

  it('a whitespace-only quote is absent', () => {
    expect(locateQuote('a b', ' \n ')).toEqual({ error: 'absent', count: 0 });
  });

  it('occurrence that is not an integer >= 1 is a RangeError', () => {
    expect(() => locateQuote('a', 'a', 0)).toThrow(RangeError);
  });

  it('property: a located range normalises back to the normalised quote', () => {
    const piece = fc.constantFrom('a', 'b', ' ', '\n', '\t', 'c');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), fc.nat(), fc.nat(), (chars, i, j) => {
        const raw = chars.join('');
        const a = i % (raw.length + 1);
        const b = a + (j % (raw.length - a + 1));
        const quote = raw.slice(a, b);
        const r = locateQuote(raw, quote);
        if ('error' in r) return r.error === 'ambiguous' || normaliseWhitespace(quote) === '';
        return normaliseWhitespace(raw.slice(r.start, r.end)) === normaliseWhitespace(quote);
      }),
    );
  });
});
