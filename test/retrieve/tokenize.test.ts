import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { sharedDocumentTexts } from '../helpers/datasets.js';
import { describe, expect, it } from 'vitest';
import { analyse, keywordTokens, STOP_WORDS } from '../../src/retrieve/tokenize.js';

const datasets = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/datasets');

describe('keywordTokens: identifiers and numbers (field case B03)', () => {
  it('LMP-204 yields its parts and the joined form, in that order', () => {
    expect(keywordTokens('LMP-204')).toEqual(['lmp', '204', 'lmp204']);
  });

  it('matching ignores case: lmp-205 and LMP-205 give the same terms', () => {
    expect(keywordTokens('lmp-205')).toEqual(keywordTokens('LMP-205'));
    expect(keywordTokens('lmp-205')).toEqual(['lmp', '205', 'lmp205']);
  });

  it('the B03 document: stop word "on" dropped, words stemmed, numbers kept', () => {
    expect(keywordTokens('Replace seal kit on pump LMP-204 every 500 hours')).toEqual([
      'replac', 'seal', 'kit', 'pump', 'lmp', '204', 'lmp204', 'everi', '500', 'hour',
    ]);
  });

  it('connectors - _ . / join compounds; terms with digits are not stemmed', () => {
    expect(keywordTokens('x86_64')).toEqual(['x86', '64', 'x8664']);
    expect(keywordTokens('e-mail')).toEqual(['e', 'mail', 'email']);
    expect(keywordTokens('km/h')).toEqual(['km', 'h', 'kmh']);
  });

  it('a sentence-final full stop is not a connector', () => {
    expect(keywordTokens('Check the pump. Then stop.')).toEqual(['check', 'pump', 'stop']);
  });
});

describe('keywordTokens: stop words, stemming, normalisation', () => {
  it('removes English stop words (wink-nlp-utils list) but keeps negations', () => {
    expect(keywordTokens('the pump is on')).toEqual(['pump']);
    expect(keywordTokens("it's not working")).toEqual(['not', 'work']);
    expect(STOP_WORDS.has('the')).toBe(true);
    expect(STOP_WORDS.has('not')).toBe(false);
    expect(STOP_WORDS.size).toBe(153);
  });

  it('stems with Porter2: running pumps -> run pump, bearings housing -> bear hous', () => {
    expect(keywordTokens('running pumps')).toEqual(['run', 'pump']);
    expect(keywordTokens('bearings housing')).toEqual(['bear', 'hous']);
  });

  it("apostrophes: possessive 's removed, inner apostrophes dropped, curly ones too", () => {
    expect(keywordTokens("user's manual")).toEqual(['user', 'manual']);
    expect(keywordTokens('user’s')).toEqual(['user']);
    expect(keywordTokens("don't")).toEqual(['dont']);
  });

  it('folds Latin diacritics and compatibility forms (NFKC): Café ﬁle -> cafe file; other scripts kept', () => {
    expect(keywordTokens('Café ﬁle')).toEqual(['cafe', 'file']);
    expect(keywordTokens('Привет мир')).toEqual(['привет', 'мир']);
  });

  it('empty text, punctuation and stop words alone give no terms', () => {
    expect(keywordTokens('')).toEqual([]);
    expect(keywordTokens(' -- ?! ')).toEqual([]);
    expect(keywordTokens('the and of')).toEqual([]);
  });

  it('property: on ASCII text, upper and lower case give the same terms', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'abcDEF xyz-204._/\'s,'.split('')), maxLength: 40 }), (s) => {
        expect(keywordTokens(s.toUpperCase())).toEqual(keywordTokens(s.toLowerCase()));
      }),
    );
  });
});

describe('the ASCII shortcut gives the terms of the full Unicode pipeline', () => {
  // The shortcut skips the normalisation forms and uses [a-z0-9] for \p{L}\p{N}: exact only for ASCII text, which is
  // what keywordTokens routes through it. Alphabet: letters of both cases, digits, every connector, apostrophes,
  // stop words' letters, whitespace of several kinds and other punctuation.
  const unit = fc.constantFrom(...'abesTHIoRnx0129 -_./\'\t\n,;:!?()"#'.split(''));

  it('property: analyse(t, "ascii") equals analyse(t, "unicode") for any ASCII text', () => {
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 60 }), (t) => {
        expect(analyse(t, 'ascii')).toEqual(analyse(t, 'unicode'));
      }),
      { numRuns: 3000 },
    );
  });

  it('keywordTokens routes text with any character from U+0080 up through the full pipeline', () => {
    // With the shortcut, "café" would match only "caf" (é is not [a-z]); the full pipeline folds it to "cafe".
    expect(keywordTokens('café pumps')).toEqual(['cafe', 'pump']);
    expect(analyse('café pumps', 'ascii')).toEqual(['caf', 'pump']);
    expect(keywordTokens('x\u0080y')).toEqual(analyse('x\u0080y', 'unicode'));
  });

  it.skipIf(!existsSync(path.join(datasets, 'scifact')))('every ASCII document of SciFact and TREC-DL: both paths give the same terms', () => {
    let checked = 0;
    for (const t of sharedDocumentTexts(['scifact', 'trec-dl-2019-5k'])) {
      if (/[^\x00-\x7f]/.test(t)) continue;
      expect(analyse(t, 'ascii')).toEqual(analyse(t, 'unicode'));
      checked++;
    }
    expect(checked).toBeGreaterThan(3000); // 3,994 of SciFact's 5,183 documents are ASCII
  });
});
