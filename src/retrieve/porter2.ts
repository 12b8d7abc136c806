/**
 * Porter2, the Snowball English stemmer (M. F. Porter, "The English (Porter2) stemming algorithm", Snowball, 2001,
 * revised 2006; https://snowballstem.org/algorithms/english/stemmer.html), written over character codes: one pass
 * per step on a byte buffer, no regular expressions, no intermediate strings.
 *
 * The contract is equality with wink-porter2-stemmer 2.0.1 (the stemmer the keyword analyser used until session 10)
 * on every lower-case a–z word: test/retrieve/porter2.test.ts checks every distinct such word of the shared corpora
 * and 200,000 generated words against it. Where wink departs from the published algorithm, this module follows wink
 * (each place is marked "wink:" in the code):
 *
 * 1. Exceptional forms (skis → ski, skies → sky, dying → die, lying → lie, tying → tie, idly → idl, gently → gentl,
 *    ugly → ugli, early → earli, only → onli, singly → singl; sky, news, atlas, cosmos, bias, andes unchanged) are
 *    looked up on the whole word before anything else; "howe" is not among them (Snowball 2006 lists it), and the R1
 *    prefixes are gener, commun and arsen only (later Snowball versions add past, univers, later, emerg, organ).
 * 2. Prelude: an initial y becomes Y, and then only the FIRST y that follows a, e, i, o or u becomes Y (Snowball marks
 *    every y after a vowel, and counts y itself as a vowel there).
 * 3. Step 1a: `sses` → `ss` only when a letter precedes it; `ied`/`ies` → `i` after two or more letters, → `ie` after
 *    exactly one, and a bare `ies` (the whole word) loses its `s` by the `s` rule while a bare `ied` stays.
 * 4. Step 1b: "short word" is tested on the stem left after deleting ed/edly/ing/ingly as "ends in a short syllable
 *    and R1 is empty", where a short syllable at the start of a word is a vowel alone or a vowel and one non-vowel
 *    (so `aed` → `ae`, `ied` → `ie`).
 * 5. Step 5: "ends in a short syllable" uses the same definition (a lone vowel counts).
 * 6. Regions R1 and R2 are recomputed on the current word at the start of every step (what Snowball's definition
 *    gives too, since steps only touch the end of the word), and "suffix in R1/R2" means the region is at least as
 *    long as the suffix.
 *
 * Words of fewer than 3 letters are returned unchanged. The outcome for words with characters other than a–z is not
 * specified (they are treated as non-vowels and never throw); callers stem only /^[a-z]+$/ words.
 */

/** Exceptional forms (step 0): whole word → stem. wink: its list, which lacks Snowball 2006's `howe`. */
const EXCEPTIONS: ReadonlyMap<string, string> = new Map([
  ['skis', 'ski'],
  ['skies', 'sky'],
  ['dying', 'die'],
  ['lying', 'lie'],
  ['tying', 'tie'],
  ['idly', 'idl'],
  ['gently', 'gentl'],
  ['ugly', 'ugli'],
  ['early', 'earli'],
  ['only', 'onli'],
  ['singly', 'singl'],
  ['sky', 'sky'],
  ['news', 'news'],
  ['atlas', 'atlas'],
  ['cosmos', 'cosmos'],
  ['bias', 'bias'],
  ['andes', 'andes'],
]);

/** Words left as they are after step 1a (Snowball's second exception list). */
const INVARIANT_AFTER_1A = ['inning', 'outing', 'canning', 'herring', 'earring', 'proceed', 'exceed', 'succeed'];

const a = 97, b = 98, c = 99, d = 100, e = 101, g = 103, i = 105, l = 108, m = 109, n = 110, o = 111, r = 114;
const s = 115, t = 116, u = 117, w = 119, x = 120, y = 121, z = 122;
/** The marked y (Snowball's `Y`): a consonant; written back as `y` at the end. */
const Y = 89;

/** 1 for a, e, i, o, u, y (Snowball's vowels; the marked Y is not one). */
const VOWEL = new Uint8Array(128);
for (const ch of 'aeiouy') VOWEL[ch.charCodeAt(0)] = 1;
/** Letters that may precede a deleted `li` in step 2 (Snowball's valid li-endings). */
const LI_ENDING = new Uint8Array(128);
for (const ch of 'cdeghkmnrt') LI_ENDING[ch.charCodeAt(0)] = 1;

const isVowel = (code: number): boolean => code < 128 && VOWEL[code] === 1;

/** The word being stemmed, as character codes; `len` is its current length. Grown on demand, never shrunk. */
let buf = new Uint8Array(64);
let len = 0;

/** True when the current word ends with `suffix` (lower-case ASCII). */
function endsWith(suffix: string): boolean {
  const k = suffix.length;
  if (k > len) return false;
  for (let j = 0, p = len - k; j < k; j++, p++) if (buf[p] !== suffix.charCodeAt(j)) return false;
  return true;
}

/** True when the current word starts with `prefix` (lower-case ASCII). */
function startsWith(prefix: string): boolean {
  const k = prefix.length;
  if (k > len) return false;
  for (let j = 0; j < k; j++) if (buf[j] !== prefix.charCodeAt(j)) return false;
  return true;
}

/** Start of the region after the first non-vowel that follows a vowel at or after `from` (`len` when there is none). */
function regionAfter(from: number): number {
  let p = from;
  while (p < len && !isVowel(buf[p])) p++;
  while (p < len && isVowel(buf[p])) p++;
  return p < len ? p + 1 : len;
}

/** Start of R1: after gener/commun/arsen when the word starts with one, else the standard definition. */
function r1Start(): number {
  if (len >= 5 && (startsWith('gener') || startsWith('arsen'))) return 5;
  if (len >= 6 && startsWith('commun')) return 6;
  return regionAfter(0);
}

/**
 * Whether the first `k` letters of the word end in a short syllable. wink: a short syllable is a non-vowel, a vowel
 * and a non-vowel other than w, x or Y at the end; or the whole of the `k` letters being a vowel, or a vowel and one
 * non-vowel (any non-vowel).
 */
function endsShort(k: number): boolean {
  if (k >= 3) {
    const last = buf[k - 1];
    return !isVowel(buf[k - 3]) && isVowel(buf[k - 2]) && !isVowel(last) && last !== w && last !== x && last !== Y;
  }
  if (k === 2) return isVowel(buf[0]) && !isVowel(buf[1]);
  return k === 1 && isVowel(buf[0]);
}

/** True when some vowel lies before position `end`. */
function vowelBefore(end: number): boolean {
  for (let p = 0; p < end; p++) if (isVowel(buf[p])) return true;
  return false;
}

/** Replaces the last `drop` letters by `add`. */
function replaceEnd(drop: number, add: string): void {
  len -= drop;
  for (let j = 0; j < add.length; j++) buf[len++] = add.charCodeAt(j);
}

/** Marks the initial y, and the first y after a, e, i, o or u (wink: only the first), as Y. */
function prelude(): void {
  if (buf[0] === y) buf[0] = Y;
  for (let p = 1; p < len; p++) {
    if (buf[p] === y) {
      const before = buf[p - 1];
      if (before === a || before === e || before === i || before === o || before === u) {
        buf[p] = Y;
        return;
      }
    }
  }
}

/** Step 1a: plural and `-ied` endings. */
function step1a(): void {
  if (buf[len - 1] === s) {
    if (len >= 5 && endsWith('sses')) return void (len -= 2);
    if (endsWith('ies')) {
      if (len >= 5) len -= 2;
      else if (len === 4) len -= 1;
      else len -= 1; // wink: a bare "ies" loses its s through the s rule (a vowel before the letter before it).
      return;
    }
    const before = buf[len - 2];
    if ((before === u || before === s) && len >= 3) return;
    // Delete s when the part before it has a vowel that is not the letter just before the s.
    if (vowelBefore(len - 2)) len -= 1;
    return;
  }
  if (buf[len - 1] === d && endsWith('ied')) {
    if (len >= 5) len -= 2;
    else if (len === 4) len -= 1;
    // wink: a bare "ied" stays (step 1b then makes it "ie").
  }
}

/** True when the current word is one of {@link INVARIANT_AFTER_1A}. */
function invariantAfter1a(): boolean {
  if (len !== 6 && len !== 7) return false;
  for (const word of INVARIANT_AFTER_1A) if (word.length === len && startsWith(word)) return true;
  return false;
}

/** Step 1b: eed/eedly → ee in R1; ed/edly/ing/ingly deleted after a vowel, then the stem tidied. */
function step1b(): void {
  const last = buf[len - 1];
  if (last === d || last === y) {
    if (endsWith('eedly')) {
      if (len - r1Start() >= 5) len -= 3;
      return;
    }
    if (endsWith('eed')) {
      if (len - r1Start() >= 3) len -= 1;
      return;
    }
  }
  let k = 0;
  if (last === d) k = endsWith('ed') ? 2 : 0;
  else if (last === g) k = endsWith('ing') ? 3 : 0;
  else if (last === y) k = endsWith('edly') ? 4 : endsWith('ingly') ? 5 : 0;
  if (k === 0 || !vowelBefore(len - k)) return;
  len -= k;
  const end = buf[len - 1];
  const prev = len >= 2 ? buf[len - 2] : 0;
  if ((prev === a && end === t) || (prev === b && end === l) || (prev === i && end === z)) {
    buf[len++] = e;
    return;
  }
  if (end === prev && (end === b || end === d || end === 102 || end === g || end === m || end === n ||
    end === 112 || end === r || end === t)) {
    len -= 1;
    return;
  }
  if (endsShort(len) && r1Start() >= len) buf[len++] = e;
}

/** Step 1c: final y or Y → i after a non-vowel that is not the first letter. */
function step1c(): void {
  if (len >= 3) {
    const last = buf[len - 1];
    if ((last === y || last === Y) && !isVowel(buf[len - 2])) buf[len - 1] = i;
  }
}

/**
 * Step 2 suffixes by last letter, longest first: [suffix, replacement]. A replacement of `null` marks the two
 * conditional ones (`ogi` after l, `li` after a valid li-ending).
 */
const STEP2: Record<number, ReadonlyArray<readonly [string, string | null]>> = {
  [n]: [['ization', 'ize'], ['ation', 'ate']],
  [l]: [['ational', 'ate'], ['tional', 'tion']],
  [s]: [['fulness', 'ful'], ['ousness', 'ous'], ['iveness', 'ive']],
  [i]: [
    ['biliti', 'ble'], ['lessli', 'less'], ['entli', 'ent'], ['aliti', 'al'], ['ousli', 'ous'], ['iviti', 'ive'],
    ['fulli', 'ful'], ['enci', 'ence'], ['anci', 'ance'], ['abli', 'able'], ['alli', 'al'], ['bli', 'ble'],
    ['ogi', null], ['li', null],
  ],
  [m]: [['alism', 'al']],
  [r]: [['izer', 'ize'], ['ator', 'ate']],
};

/** Step 2: the longest suffix of {@link STEP2}, replaced when it lies in R1. */
function step2(): void {
  const list = STEP2[buf[len - 1]];
  if (list === undefined) return;
  for (const [suffix, replacement] of list) {
    if (!endsWith(suffix)) continue;
    if (len - r1Start() < suffix.length) return;
    if (replacement !== null) replaceEnd(suffix.length, replacement);
    else if (suffix === 'ogi') {
      if (len >= 4 && buf[len - 4] === l) len -= 1;
    } else if (len >= 3 && buf[len - 3] < 128 && LI_ENDING[buf[len - 3]] === 1) len -= 2;
    return;
  }
}

/** Step 3 suffixes by last letter, longest first; `null` marks `ative` (deleted only in R2). */
const STEP3: Record<number, ReadonlyArray<readonly [string, string | null]>> = {
  [l]: [['ational', 'ate'], ['tional', 'tion'], ['ical', 'ic'], ['ful', '']],
  [e]: [['alize', 'al'], ['icate', 'ic'], ['ative', null]],
  [i]: [['iciti', 'ic']],
  [s]: [['ness', '']],
};

/** Step 3: the longest suffix of {@link STEP3}, replaced when it lies in R1 (`ative`: deleted when in R2). */
function step3(): void {
  const list = STEP3[buf[len - 1]];
  if (list === undefined) return;
  for (const [suffix, replacement] of list) {
    if (!endsWith(suffix)) continue;
    const r1 = r1Start();
    if (len - r1 < suffix.length) return;
    if (replacement !== null) replaceEnd(suffix.length, replacement);
    else if (len - regionAfter(r1) >= 5) len -= 5;
    return;
  }
}

/** Step 4 suffixes by last letter, longest first (`ion` is deleted only after s or t). */
const STEP4: Record<number, readonly string[]> = {
  [t]: ['ement', 'ment', 'ant', 'ent'],
  [e]: ['ance', 'ence', 'able', 'ible', 'ate', 'ive', 'ize'],
  [m]: ['ism'],
  [i]: ['iti'],
  [s]: ['ous'],
  [n]: ['ion'],
  [l]: ['al'],
  [r]: ['er'],
  [c]: ['ic'],
};

/** Step 4: the longest suffix of {@link STEP4}, deleted when it lies in R2. */
function step4(): void {
  const list = STEP4[buf[len - 1]];
  if (list === undefined) return;
  for (const suffix of list) {
    if (!endsWith(suffix)) continue;
    const k = suffix.length;
    if (len - regionAfter(r1Start()) < k) return;
    if (suffix !== 'ion') len -= k;
    else if (len >= 4 && (buf[len - 4] === s || buf[len - 4] === t)) len -= 3;
    return;
  }
}

/** Step 5: final e deleted in R2, or in R1 when not after a short syllable; final l deleted in R2 after l. */
function step5(): void {
  const last = buf[len - 1];
  if (last !== e && last !== l) return;
  const r1 = r1Start();
  const inR2 = regionAfter(r1) < len;
  if (last === e) {
    if (inR2 || (r1 < len && !endsShort(len - 1))) len -= 1;
  } else if (inR2 && len >= 2 && buf[len - 2] === l) len -= 1;
}

/**
 * The Porter2 stem of `word`, a lower-case a–z word (`hours` → `hour`, `bearing` → `bear`, `generously` →
 * `generous`). Pure; equal to wink-porter2-stemmer 2.0.1 on every such word (see the module comment for where that
 * differs from Snowball). Words of fewer than 3 letters come back unchanged. Never throws; other characters are
 * treated as non-vowels (no result is promised for them).
 */
export function porter2(word: string): string {
  const size = word.length;
  if (size < 3) return word;
  const exception = EXCEPTIONS.get(word);
  if (exception !== undefined) return exception;
  if (size > buf.length) buf = new Uint8Array(size * 2);
  for (let p = 0; p < size; p++) buf[p] = word.charCodeAt(p);
  len = size;
  prelude();
  step1a();
  if (!invariantAfter1a()) {
    step1b();
    step1c();
    step2();
    step3();
    step4();
    step5();
  }
  // The stem shares its start with the word (Y is written back as y); only the changed tail is built.
  let same = 0;
  const limit = len < size ? len : size;
  while (same < limit && (buf[same] === word.charCodeAt(same) || (buf[same] === Y && word.charCodeAt(same) === y))) {
    same++;
  }
  if (same === size && len === size) return word;
  let out = same === 0 ? '' : word.slice(0, same);
  for (let p = same; p < len; p++) out += String.fromCharCode(buf[p] === Y ? y : buf[p]);
  return out;
}
