/**
 * Our Porter2 stemmer (src/retrieve/porter2.ts) against the reference it replaced, wink-porter2-stemmer 2.0.1:
 * hand-checked stems (Snowball's sample vocabulary and the special cases), every word of up to 4 letters, 200,000
 * generated words weighted toward the algorithm's suffixes and special cases (fast-check, fixed seed), and every
 * distinct a–z word of the shared corpora (skipped when ../shared/datasets is absent).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { porter2 } from '../../src/retrieve/porter2.js';
import { sharedDatasets } from '../helpers/datasets.js';

const require = createRequire(import.meta.url);
/** The reference: wink-porter2-stemmer 2.0.1 (a devDependency kept for this test). */
const wink = require('wink-porter2-stemmer') as (word: string) => string;

/** Words of `stem` that differ from the reference, as `word: ours ≠ wink` lines (empty when all agree). */
function mismatches(words: Iterable<string>): string[] {
  const out: string[] = [];
  for (const word of words) {
    const ours = porter2(word);
    const theirs = wink(word);
    if (ours !== theirs) out.push(`${word}: ${ours} ≠ ${theirs}`);
  }
  return out;
}

describe('porter2: hand-checked stems', () => {
  it('the analyser examples: hours → hour, bearing → bear', () => {
    // hours: step 1a deletes the s (a vowel, o, lies before the letter before it); no later suffix applies.
    expect(porter2('hours')).toBe('hour');
    // bearing: step 1b deletes ing (vowels before it); "bear" ends in no double, at/bl/iz, or short syllable.
    expect(porter2('bearing')).toBe('bear');
  });

  it('Snowball sample vocabulary (voc.txt → output.txt), each also equal to wink', () => {
    const sample: Record<string, string> = {
      consign: 'consign', consigned: 'consign', consigning: 'consign', consignment: 'consign',
      consistency: 'consist', consistently: 'consist', consolation: 'consol', consolatory: 'consolatori',
      consolidating: 'consolid', consolingly: 'consol', consonant: 'conson', conspicuously: 'conspicu',
      conspiracy: 'conspiraci', conspirators: 'conspir', constable: 'constabl', constancy: 'constanc',
      knackeries: 'knackeri', kneaded: 'knead', kneeling: 'kneel', knees: 'knee', knightly: 'knight',
      knitting: 'knit', knives: 'knive', knocker: 'knocker', knots: 'knot', generously: 'generous',
      generate: 'generat', caresses: 'caress', ponies: 'poni', ties: 'tie', cries: 'cri', hopping: 'hop',
      hoped: 'hope', filing: 'file', fizzed: 'fizz', luxuriating: 'luxuri', agreed: 'agre', sayings: 'say',
    };
    for (const [word, stem] of Object.entries(sample)) {
      expect(porter2(word), word).toBe(stem);
      expect(wink(word), word).toBe(stem);
    }
  });

  it('exceptional forms, the step 1a invariants and the R1 prefixes gener/commun/arsen', () => {
    const cases: Record<string, string> = {
      skis: 'ski', skies: 'sky', sky: 'sky', news: 'news', dying: 'die', lying: 'lie', tying: 'tie', idly: 'idl',
      gently: 'gentl', ugly: 'ugli', early: 'earli', only: 'onli', singly: 'singl', atlas: 'atlas',
      cosmos: 'cosmos', bias: 'bias', andes: 'andes',
      // Step 1a first (innings → inning), then the invariant list stops every later step.
      innings: 'inning', outing: 'outing', outings: 'outing', canning: 'canning', herring: 'herring',
      earring: 'earring', proceed: 'proceed', exceed: 'exceed', succeed: 'succeed',
      // R1 starts after the prefix: communism's R1 is "ism", whose R2 ("m") cannot hold the step 4 suffix ism.
      communism: 'communism', arsenal: 'arsenal', arsenic: 'arsenic',
    };
    for (const [word, stem] of Object.entries(cases)) {
      expect(porter2(word), word).toBe(stem);
      expect(wink(word), word).toBe(stem);
    }
  });

  it("wink's departures from Snowball are matched: howe, a bare sses, the first vowel-y only", () => {
    // wink has no "howe" exception: step 5 deletes the e (R1 = "e" and "how" ends in no short syllable: w).
    expect(porter2('howe')).toBe('how');
    // sses → ss needs a letter before it in wink; a bare "sses" falls to the s rule, whose vowel (e) is the letter
    // just before the s, so nothing is deleted.
    expect(porter2('sses')).toBe('sses');
    // A bare "ies" loses its s (the vowel i lies before e); a bare "ied" stays in 1a, then 1b deletes ed and the
    // lone vowel i counts as a short syllable with empty R1, so e is added.
    expect(porter2('ies')).toBe('ie');
    expect(porter2('ied')).toBe('ie');
    // Only the first y after a, e, i, o or u is marked as a consonant (Snowball marks each). "neyloyy": the y after
    // e is marked, the one after o is not, so it stays a vowel and step 1c leaves the final y (which follows it)
    // alone; Snowball would mark both and end with "neyloyi".
    expect(porter2('neyloyy')).toBe('neyloyy');
    for (const word of ['howe', 'sses', 'ies', 'ied', 'ayyay', 'sayyid', 'playboys', 'employyed', 'neyloyy', 'eylayoyy'])
      expect(porter2(word), word).toBe(wink(word));
  });

  it('short words are returned unchanged; y handling: cry → cri, say → say, toys → toy, youth → youth', () => {
    for (const word of ['', 'a', 'is', 'by', 'ye']) expect(porter2(word)).toBe(word);
    expect(porter2('cry')).toBe('cri');
    expect(porter2('say')).toBe('say');
    expect(porter2('toys')).toBe('toy');
    expect(porter2('youth')).toBe('youth');
  });

  it('the stem does not depend on the words stemmed before it (shared buffer)', () => {
    const long = 'pneumonoultramicroscopicsilicovolcanoconiosis'.repeat(3);
    const expected = wink(long);
    expect(porter2('hours')).toBe('hour');
    expect(porter2(long)).toBe(expected);
    expect(porter2('hours')).toBe('hour');
    expect(porter2(long)).toBe(expected);
  });
});

describe('porter2 equals wink-porter2-stemmer', () => {
  it('on every a–z word of 1 to 4 letters (475,254 words)', () => {
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const words: string[] = [];
    const grow = (prefix: string, left: number): void => {
      if (left === 0) return void words.push(prefix);
      for (const ch of letters) grow(prefix + ch, left - 1);
    };
    for (let k = 1; k <= 4; k++) grow('', k);
    expect(words.length).toBe(26 + 26 ** 2 + 26 ** 3 + 26 ** 4);
    expect(mismatches(words)).toEqual([]);
  });

  it('property: 200,000 words built from suffixes, special cases and single letters (seed 25)', () => {
    const pieces = [
      // Letters, vowels and the y cases.
      ...'abcdefghijklmnopqrstuvwxyz', 'ay', 'ey', 'oy', 'uy', 'yy', 'ya', 'yo',
      // Step 1a/1b/1c.
      'ss', 'us', 'ied', 'ies', 'sses', 'eed', 'eedly', 'ed', 'edly', 'ing', 'ingly', 'at', 'bl', 'iz',
      'bb', 'dd', 'ff', 'gg', 'mm', 'nn', 'pp', 'rr', 'tt', 'w', 'x',
      // Step 2.
      'ization', 'ational', 'fulness', 'ousness', 'iveness', 'tional', 'biliti', 'lessli', 'entli', 'ation', 'alism',
      'aliti', 'ousli', 'iviti', 'fulli', 'enci', 'anci', 'abli', 'izer', 'ator', 'alli', 'bli', 'ogi', 'logi', 'li',
      'cli', 'tli', 'sli',
      // Step 3, 4, 5.
      'alize', 'icate', 'iciti', 'ative', 'ical', 'ness', 'ful', 'ement', 'ance', 'ence', 'able', 'ible', 'ment',
      'ant', 'ent', 'ism', 'ate', 'iti', 'ous', 'ive', 'ize', 'ion', 'sion', 'tion', 'al', 'er', 'ic', 'le', 'll',
      // R1 prefixes.
      'gener', 'commun', 'arsen',
    ];
    const specials = [
      'skis', 'skies', 'sky', 'news', 'dying', 'lying', 'tying', 'idly', 'gently', 'ugly', 'early', 'only', 'singly',
      'innings', 'inning', 'outing', 'canning', 'herring', 'earring', 'proceed', 'exceed', 'succeed', 'howe',
      'atlas', 'cosmos', 'bias', 'andes',
    ];
    const word = fc.oneof(
      { weight: 9, arbitrary: fc.array(fc.constantFrom(...pieces), { minLength: 1, maxLength: 6 }).map((p) => p.join('')) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(fc.constantFrom(...specials), fc.constantFrom('', 's', 'ed', 'ing', 'ly', 'ness', 'e'))
          .map(([w, suffix]) => w + suffix),
      },
    );
    fc.assert(
      fc.property(word, (w) => porter2(w) === wink(w)),
      { numRuns: 200_000, seed: 25 },
    );
  });

  const datasets = existsSync(sharedDatasets)
    ? readdirSync(sharedDatasets).filter((name) => existsSync(path.join(sharedDatasets, name, 'corpus.jsonl')))
    : [];
  it.skipIf(datasets.length === 0)('on every distinct a–z word of the shared corpora and queries', () => {
    const words = new Set<string>();
    for (const name of datasets) {
      for (const file of ['corpus.jsonl', 'queries.jsonl']) {
        const full = path.join(sharedDatasets, name, file);
        if (!existsSync(full)) continue;
        for (const m of readFileSync(full, 'utf8').toLowerCase().matchAll(/[a-z]+/g)) words.add(m[0]);
      }
    }
    // SciFact and TREC-DL 2019 5k (corpus and queries, JSON keys included) hold 37,966 distinct a–z words.
    expect(words.size).toBeGreaterThan(30_000);
    expect(mismatches(words)).toEqual([]);
  });
});
