/**
 * The keyword (BM25) analyser: text → index terms. Used for documents and queries alike, so both sides always agree.
 *
 * Pipeline, in order (deterministic; no locale-dependent steps, no global state):
 * 1. Unicode NFKC (`ﬁ` → `fi`, full-width digits → ASCII digits, `²` → `2`), then `toLowerCase()`.
 * 2. Diacritics are folded on Latin letters only (`café` → `cafe`): NFD, drop combining marks that follow a
 *    Latin-script letter, NFC. Marks of other scripts (Devanagari vowel signs, ...) are kept.
 * 3. Curly apostrophes (`’ ‘ ʼ`) become `'`.
 * 4. A *word* is a run of letters/digits (`\p{L}\p{N}`), optionally with inner apostrophes (`don't`). A *compound* is
 *    words joined by single connectors `-`, `_`, `.`, `/` with no whitespace (`LMP-204`, `e.g`, `x86_64`, `km/h`).
 *    Everything else (whitespace, other punctuation, symbols) separates tokens.
 * 5. Each word of a compound is emitted as its own term, and a compound of ≥ 2 words also emits the joined form, after
 *    its parts: `LMP-204` → `lmp`, `204`, `lmp204`. So the query `LMP-204` prefers the LMP-204 document over LMP-205
 *    (two extra matching terms), the fragment query `204` still matches, and `lmp-205` finds LMP-205 (field case B03).
 *    The joined form is emitted even when some parts are stop words (`state-of-the-art` → …, `stateoftheart`).
 * 6. Stop words are dropped (checked before and after apostrophe stripping). The list is wink-nlp-utils 2.1.0
 *    `src/dictionaries/stop_words.json`: 153 words, the classic Snowball English stop list (`i`, `me`, … `would`,
 *    `ought`, contractions such as `it's`, `let's`, … `very`) without its negations (`no`, `nor`, `not`, `isn't`,
 *    `can't`, `cannot`, …), so negations stay searchable. See {@link STOP_WORDS}.
 * 7. Apostrophes: a trailing `'s` is removed, then the remaining apostrophes (`don't` → `dont`, `o'neill` → `oneill`).
 * 8. Terms made only of the letters a–z are stemmed with Porter2 (Snowball English; our own, porter2.ts, equal to
 *    wink-porter2-stemmer 2.0.1 on every a–z word, departures from Snowball included: test/retrieve/porter2.test.ts)
 *    (`hours` → `hour`, `bearing` → `bear`). Terms with digits or other scripts are kept as they are (`204`, `x86`,
 *    `lmp204`).
 *
 * Limits: no word segmentation for scripts written without spaces (a run of CJK characters is one term); numbers with
 * separators split at the separator (`3.14` → `3`, `14`, `314`; `1,000` → `1`, `000`).
 */
import { createRequire } from 'node:module';
import { porter2 } from './porter2.js';

const require = createRequire(import.meta.url);

/**
 * The English stop words removed by {@link keywordTokens}: wink-nlp-utils 2.1.0 `src/dictionaries/stop_words.json`,
 * lower case, some with apostrophes (`it's`).
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  require('wink-nlp-utils/src/dictionaries/stop_words.json') as string[],
);

/**
 * Version tag of the analyser, recorded in BM25 index params and in the plan's keyword unit keys; change it whenever
 * the pipeline above changes its terms. (It still names wink-porter2-stemmer: our porter2.ts gives the same stems, so
 * the terms, and indexes and checkpoints keyed by this tag, are unchanged.)
 */
export const KEYWORD_ANALYSER =
  'keywordTokens v1: NFKC, lower case, Latin diacritics folded, compounds split on - _ . / plus joined form, ' +
  'wink-nlp-utils stop words, Porter2 (wink-porter2-stemmer) on a-z terms';

const WORD = String.raw`[\p{L}\p{N}]+(?:'[\p{L}\p{N}]+)*`;
const COMPOUND = new RegExp(`${WORD}(?:[-_./]${WORD})*`, 'gu');
/**
 * COMPOUND for text that is ASCII after lower-casing: there `\p{L}` is `[a-z]` and `\p{N}` is `[0-9]`, so this matches
 * exactly what COMPOUND matches (test/retrieve/tokenize.test.ts checks both paths give the same terms), without the
 * cost of Unicode property classes.
 */
const ASCII_COMPOUND = /[a-z0-9]+(?:'[a-z0-9]+)*(?:[-_./][a-z0-9]+(?:'[a-z0-9]+)*)*/g;
const CONNECTOR = /[-_./]/u;
const LATIN_MARKS = /(\p{Script=Latin})\p{M}+/gu;
const CURLY_APOSTROPHES = /[\u2019\u2018\u02BC]/gu;
const ASCII_WORD = /^[a-z]+$/;
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * Lower-cased, folded text ready for term extraction (steps 1–3). ASCII text is invariant under every Unicode
 * normalisation form, has no combining marks and no curly apostrophes, so for it steps 1–3 are `toLowerCase()` alone.
 */
function normalise(text: string, ascii: boolean): string {
  if (ascii) return text.toLowerCase();
  return text
    .normalize('NFKC')
    .toLowerCase()
    .normalize('NFD')
    .replace(LATIN_MARKS, '$1')
    .normalize('NFC')
    .replace(CURLY_APOSTROPHES, "'");
}

/** Apostrophe stripping (step 7). */
function stripApostrophes(word: string): string {
  if (!word.includes("'")) return word;
  return word.replace(/'s$/u, '').replace(/'/gu, '');
}

/** Distinct words remembered by the word memo below before it is cleared (bounds memory). */
const MEMO_LIMIT = 200_000;

/**
 * `s` as a string of its own. A word matched in a text may be a V8 slice of that whole (lower-cased) text; kept as a
 * memo key or value (or, through the returned term, a term-table key) it would keep the whole text alive.
 */
function detach(s: string): string {
  return s.length < 13 ? s : (' ' + s).slice(1);
}
/**
 * Stemming (step 8). Not memoised: words reach it through wordMemo's misses (once per distinct word), and our Porter2
 * (~0.4-0.7 µs a word) costs about what a memo's lookup and insert cost; only compounds' joined forms repeat here
 * (docs/bm25.md, "Our own Porter2 stemmer").
 */
function stemTerm(term: string): string {
  return detach(ASCII_WORD.test(term) ? porter2(term) : term);
}

/** Steps 6–8 for one word of a compound, memoised (a pure function of the word): its term, or '' when dropped. */
const wordMemo = new Map<string, string>();

/**
 * Steps 6–8 for one lower-case word (letters/digits with inner apostrophes, no connector): its term, or '' when it
 * is dropped (a stop word, before or after apostrophe stripping). Exported for the BM25 build's scanner
 * (bm25-analyse.ts), which caches it per word; not part of the package's API.
 */
export function wordTerm(word: string): string {
  let term = wordMemo.get(word);
  if (term === undefined) {
    term = '';
    if (!STOP_WORDS.has(word)) {
      const bare = stripApostrophes(word);
      if (bare !== '' && !STOP_WORDS.has(bare)) term = stemTerm(bare);
    }
    if (wordMemo.size >= MEMO_LIMIT) wordMemo.clear();
    wordMemo.set(detach(word), term);
  }
  return term;
}

/**
 * Analyses `text` into BM25 index terms, in text order (a compound's parts, then its joined form). Repeated terms are
 * kept (they are term frequencies). Returns `[]` for empty text or text made only of stop words and punctuation.
 *
 * Examples: `keywordTokens('Replace pump LMP-204 every 500 hours')` →
 * `['replac', 'pump', 'lmp', '204', 'lmp204', 'everi', '500', 'hour']`; `keywordTokens('the')` → `[]`.
 */
export function keywordTokens(text: string): string[] {
  return analyse(text, NON_ASCII.test(text) ? 'unicode' : 'ascii');
}

/**
 * {@link keywordTokens} with the path chosen by the caller: `unicode` is the pipeline of the module comment for any
 * text; `ascii` is its shortcut for text whose characters are all below U+0080 (what {@link keywordTokens} uses for
 * such text). Exported for the test that both paths agree on ASCII text; not part of the package's API.
 */
export function analyse(text: string, path: 'ascii' | 'unicode'): string[] {
  const out: string[] = [];
  const ascii = path === 'ascii';
  const normal = normalise(text, ascii);
  const re = ascii ? ASCII_COMPOUND : COMPOUND;
  re.lastIndex = 0;
  for (let match = re.exec(normal); match !== null; match = re.exec(normal)) {
    const compound = match[0];
    if (!CONNECTOR.test(compound)) {
      const term = wordTerm(compound);
      if (term !== '') out.push(term);
      continue;
    }
    const parts = compound.split(CONNECTOR);
    for (const part of parts) {
      const term = wordTerm(part);
      if (term !== '') out.push(term);
    }
    const joined = stemTerm(parts.map(stripApostrophes).join(''));
    if (joined !== '') out.push(joined);
  }
  return out;
}
