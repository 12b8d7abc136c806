/**
 * Parsing questions.jsonl: one JSON object a line, validated against the loaded documents.
 *
 * Line format (blank lines allowed; a leading BOM and CRLF line ends are accepted):
 * ```json
 * {"id": "q1", "question": "How long do refunds take?",
 *  "relevant": {"refunds.md": 2, "faq/payments.md": 1},      // or ["refunds.md", "faq/payments.md"] = grade 1 each
 *  "evidence": [{"doc": "refunds.md", "quote": "within 14 days", "grade": 2, "occurrence": 1},
 *               {"doc": "faq/payments.md", "start": 120, "end": 180}],
 *  "chunks": {"refunds.md#2": 1},
 *  "tags": ["paraphrase"]}
 * ```
 * - `id`: non-empty string (a number is accepted and turned into a string). `question`: non-empty string.
 * - `relevant`: document id → integer grade 0..100 (0 = judged not relevant), or an array of ids (grade 1 each).
 * - `evidence`: spans given as a quote (located after whitespace normalisation, see evidence.ts; `occurrence` is the
 *   1-based occurrence to use when the quote appears several times) or as a raw character range `[start, end)` in
 *   UTF-16 code units, `0 ≤ start < end ≤ text length`. `grade` defaults to 1 and must be an integer 1..100.
 * - `chunks`: chunk id (`<docId>#<ordinal>`) → integer grade 0..100, stored as `Question.chunkLabels`.
 * - `tags`: array of strings.
 * The shape of a line is the zod schema `questionLineSchema` (question-schema.ts; schema/question.schema.json).
 * An unknown key is an error naming file, line, key and the nearest known key; with `strictness: 'warn'` it is
 * ignored with one warning per key. A question may have `relevant`, `evidence`, both or neither; questions with
 * no positive label are kept (the scorer excludes and reports them, field case M10).
 *
 * Document-level relevance is derived: `relevant` as given, plus every evidence document that is not already in
 * `relevant`, at the highest grade of its spans (a `relevant` grade, even 0, wins over the spans; a warning says so).
 *
 * Label ids are normalised like document ids (backslashes → `/`, leading `./` removed) and compared exactly; an
 * empty or missing label id is an error, so missing ids can never match each other (field case V02 notes).
 */
import { jsonSyntaxHint } from './json-hint.js';
import { forEachLine, formatBytes, LineTooLongError } from './lines.js';
import { docSuggester, type DocSuggestion } from './doc-suggest.js';
import { HarnessError } from '../errors.js';
import type { Doc, EvidenceSpan, Question } from '../types.js';
import { locateQuote, normaliseWithMap, type NormalisedText } from './evidence.js';
import {
  lineIssueError,
  normaliseDocId,
  questionLineSchema,
  questionLineSchemaLoose,
  rangeError,
  unknownKeysOf,
  type EvidenceLine,
  type QuestionLine,
  type UnknownKey,
} from './question-schema.js';

export { normaliseDocId } from './question-schema.js';

/** What to do with a key a line's schema does not know: error (`strict`, default) or ignore with a warning (`warn`). */
export type Strictness = 'strict' | 'warn';

/**
 * What to do with a label that names a document not in the corpus (field case V02):
 * - `strict` (default): LABEL_INVALID listing every dangling label (`q1 -> setup.md not found in corpus`);
 * - `keep`: keep it (it can never be retrieved, so it lowers recall and nDCG as trec_eval would), with a warning;
 * - `drop`: remove it, with a warning.
 */
export type LabelPolicy = 'strict' | 'keep' | 'drop';

/** Options of {@link parseQuestions}. */
export interface ParseQuestionsOptions {
  /** Dangling-label policy, default `strict`. */
  labels?: LabelPolicy;
  /** Unknown keys on a line: error (`strict`, default) or ignored with a warning (`warn`). */
  strictness?: Strictness;
}


/** A dangling label found while parsing, resolved by the policy once duplicates are collapsed. */
interface Dangling {
  doc: string;
  kind: 'relevant' | 'evidence' | 'chunks';
  grade: number;
  /** the chunk id, for `chunks` labels */
  chunkId?: string;
}

interface Draft {
  question: Question;
  lines: number[];
  /** canonical text + labels, for duplicate detection */
  key: string;
  dangling: Dangling[];
}


/**
 * Parses and validates questions.jsonl text against `docs` (id → Doc).
 *
 * @param text the file's contents.
 * @param file the file name used in messages and error locations (as the user gave it or resolved).
 * @param docs the corpus, keyed by document id.
 * @param opts `labels` (dangling-label policy, default `strict`), `strictness` (unknown keys, default `strict`).
 * @returns questions in file order (an exact duplicate keeps the position and line of its first entry) and
 *   warnings (`file:line: ...`), in order of discovery.
 * @throws HarnessError
 *   - `QUESTIONS_INVALID`: a line that is not a JSON object (names file:line and the start of the line); a
 *     missing/empty `id` or `question` (location.path names the key); `tags` not an array of strings; an unknown
 *     key under `strictness: 'strict'` (names file, line, key path and the nearest known key); conflicting
 *     duplicate ids (names the id, the number of entries and their lines; exact copies collapse with the warning
 *     `duplicate question <id> collapsed`, field case V01).
 *   - `LABEL_INVALID`: a grade that is not an integer 0..100 (1..100 for evidence); a malformed label; an evidence
 *     quote that is absent (names the question, document and first words) or ambiguous (says how many times it
 *     occurs); a range outside the text; and, under `labels: 'strict'`, every label naming a document not in `docs`.
 */
export function parseQuestions(
  text: string,
  file: string,
  docs: ReadonlyMap<string, Doc>,
  opts: ParseQuestionsOptions = {},
): { questions: Question[]; warnings: string[] } {
  const parser = questionParser(file, docs, opts);
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const rawLines = body.split('\n');
  for (let i = 0; i < rawLines.length; i++) {
    const line = rawLines[i];
    parser.add(line.endsWith('\r') ? line.slice(0, -1) : line, i + 1);
  }
  return parser.finish();
}

/** The longest questions.jsonl line {@link loadQuestionsFile} accepts: 16 MiB (a question with its labels and quotes is a few KB). */
export const MAX_QUESTION_LINE_BYTES = 16 << 20;

/** Options of {@link loadQuestionsFile}: those of {@link parseQuestions} plus how the file is read. */
export interface LoadQuestionsOptions extends ParseQuestionsOptions {
  /** Bytes read at a time; default 1 MiB (tests use tiny values). */
  highWaterMark?: number;
  /** Longest line accepted, in bytes; default {@link MAX_QUESTION_LINE_BYTES}. */
  maxLineBytes?: number;
}

/**
 * Reads and parses a questions.jsonl file line by line (lines.ts {@link forEachLine}: never the whole file as one
 * string, so its size is bounded only by the questions it holds), with the rules and errors of {@link parseQuestions}.
 * Lines that are not valid UTF-8 are decoded with U+FFFD (as before, so fingerprints do not change) and named in one
 * warning ({@link invalidUtf8Warning}), first among the warnings.
 * @returns questions in file order and warnings, as {@link parseQuestions}.
 * @throws HarnessError `QUESTIONS_INVALID` naming the file, the line and the limit when a line is longer than
 *   `maxLineBytes` (default {@link MAX_QUESTION_LINE_BYTES}), and everything {@link parseQuestions} throws; the file
 *   system's error (ENOENT, EACCES, ...) unchanged.
 */
export async function loadQuestionsFile(
  file: string,
  docs: ReadonlyMap<string, Doc>,
  opts: LoadQuestionsOptions = {},
): Promise<{ questions: Question[]; warnings: string[] }> {
  const parser = questionParser(file, docs, opts);
  const invalid: number[] = [];
  const limit = opts.maxLineBytes ?? MAX_QUESTION_LINE_BYTES;
  try {
    await forEachLine(
      file,
      (line, lineNo, utf8) => {
        if (!utf8) invalid.push(lineNo);
        parser.add(line, lineNo);
      },
      { maxLineBytes: limit, ...(opts.highWaterMark !== undefined ? { highWaterMark: opts.highWaterMark } : {}) },
    );
  } catch (e) {
    if (e instanceof LineTooLongError) {
      throw new HarnessError('QUESTIONS_INVALID', `line ${e.lineNo} is longer than ${formatBytes(e.limit)} (the limit of a questions.jsonl line)`, {
        location: { file, line: e.lineNo },
        remedy: 'write one question a line (JSON Lines: one object, then a line break); a question with its labels is a few KB',
        cause: e,
      });
    }
    throw e;
  }
  const parsed = parser.finish();
  const warning = invalidUtf8Warning(file, invalid);
  return { questions: parsed.questions, warnings: warning === undefined ? parsed.warnings : [warning, ...parsed.warnings] };
}

/**
 * The warning for a questions.jsonl whose lines `lines` (1-based, ascending) were not valid UTF-8, or undefined when
 * there are none: names the file, the count and the first 5 lines.
 */
export function invalidUtf8Warning(file: string, lines: readonly number[]): string | undefined {
  if (lines.length === 0) return undefined;
  const shown = lines.slice(0, 5);
  return (
    `${file}: ${lines.length} line(s) are not valid UTF-8 (line${shown.length > 1 ? 's' : ''} ${shown.join(', ')}${lines.length > shown.length ? ', ...' : ''}); ` +
    'their invalid bytes were read as U+FFFD; save the file as UTF-8'
  );
}

/**
 * The line-by-line core of {@link parseQuestions} and {@link loadQuestionsFile}: `add(line, lineNo)` takes one line
 * without its line end (blank lines ignored), `finish()` applies the per-file rules (unknown-key warnings, the
 * dangling-label policy) and returns the questions and warnings.
 */
function questionParser(
  file: string,
  docs: ReadonlyMap<string, Doc>,
  opts: ParseQuestionsOptions,
): { add: (line: string, lineNo: number) => void; finish: () => { questions: Question[]; warnings: string[] } } {
  const policy: LabelPolicy = opts.labels ?? 'strict';
  const strictness: Strictness = opts.strictness ?? 'strict';
  const warnings: string[] = [];
  const unknownKeys = new Map<string, { lines: number[]; u: UnknownKey }>();
  const normCache = new Map<string, NormalisedText>();
  const byId = new Map<string, Draft>();
  const order: Draft[] = [];

  const add = (line: string, lineNo: number): void => {
    if (line.trim() === '') return;
    const ctx: LineContext = { file, line: lineNo, warnings, docs, normCache };

    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch (cause) {
      const hint = jsonSyntaxHint(line);
      if (hint !== null)
        throw new HarnessError('QUESTIONS_INVALID', `line ${lineNo} is not valid JSON: ${hint.message}: ${lineStart(line)}`, {
          location: { file, line: lineNo, column: hint.column },
          remedy: `remove the comma at column ${hint.column}`,
          cause,
        });
      throw new HarnessError(
        'QUESTIONS_INVALID',
        `line ${lineNo} is not valid JSON (${cause instanceof Error ? cause.message : String(cause)}): ${lineStart(line)}`,
        { location: { file, line: lineNo }, remedy: 'write one JSON object per line (JSON Lines), e.g. {"id": "q1", "question": "...", "relevant": ["doc.md"]}', cause },
      );
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
      throw new HarnessError('QUESTIONS_INVALID', `line ${lineNo} is not a JSON object: ${lineStart(line)}`, {
        location: { file, line: lineNo },
        remedy: 'write one JSON object per line, e.g. {"id": "q1", "question": "...", "relevant": ["doc.md"]}',
      });
    }
    const rec = obj as Record<string, unknown>;
    const unknown = unknownKeysOf(rec);
    const parsed = (strictness === 'strict' ? questionLineSchema : questionLineSchemaLoose).safeParse(rec);
    if (!parsed.success) throw lineIssueError(parsed.error.issues, rec, ctx);
    for (const u of unknown) {
      const seen = unknownKeys.get(u.key);
      if (seen === undefined) unknownKeys.set(u.key, { lines: [lineNo], u });
      else if (seen.lines[seen.lines.length - 1] !== lineNo) seen.lines.push(lineNo);
    }
    const q: QuestionLine = parsed.data;

    const id = typeof q.id === 'number' ? String(q.id) : q.id;
    const tags = q.tags === undefined ? [] : [...new Set(q.tags)];
    const dangling: Dangling[] = [];
    const relevant = parseRelevant(q.relevant, id, ctx, dangling);
    const evidence = parseEvidence(q.evidence, id, ctx, dangling);
    const chunkLabels = parseChunks(q.chunks, id, ctx, dangling);

    const question: Question = { id, text: q.question, relevant, evidence, tags, line: lineNo };
    if (chunkLabels !== undefined) question.chunkLabels = chunkLabels;
    const key = canonicalKey(question, dangling);

    const prev = byId.get(id);
    if (prev === undefined) {
      const draft: Draft = { question, lines: [lineNo], key, dangling };
      byId.set(id, draft);
      order.push(draft);
      return;
    }
    prev.lines.push(lineNo);
    if (prev.key !== key) {
      throw new HarnessError(
        'QUESTIONS_INVALID',
        `duplicate question id ${id}: ${prev.lines.length} entries with different text or labels (lines ${prev.lines.join(' and ')})`,
        {
          location: { file, line: lineNo, path: 'id' },
          remedy: `give each question its own id, or delete all but one of the entries for ${id}`,
        },
      );
    }
    const mergedTags = [...prev.question.tags];
    for (const t of tags) if (!mergedTags.includes(t)) mergedTags.push(t);
    const tagNote = mergedTags.length !== prev.question.tags.length ? '; their tags were merged' : '';
    prev.question.tags = mergedTags;
    warnings.push(
      `${file}:${lineNo}: duplicate question ${id} collapsed (same text and labels as line ${prev.lines[0]}${tagNote})`,
    );
  };

  const finish = (): { questions: Question[]; warnings: string[] } => {
    // Only reached under strictness: warn (strict throws at the first unknown key).
    for (const [k, { lines, u }] of unknownKeys) {
      const shown = u.path.startsWith('evidence[') ? `evidence[].${k}` : k;
      const near = u.nearest === undefined ? '' : ` (did you mean "${u.nearest}"?)`;
      warnings.push(`${file}: unknown key "${shown}"${near} ignored on line${lines.length > 1 ? 's' : ''} ${lines.join(', ')}`);
    }
    applyDanglingPolicy(order, policy, file, warnings, docSuggester(docs.keys()));
    return { questions: order.map((d) => d.question), warnings };
  };
  return { add, finish };
}

interface LineContext {
  file: string;
  line: number;
  warnings: string[];
  docs: ReadonlyMap<string, Doc>;
  normCache: Map<string, NormalisedText>;
}

function lineStart(line: string): string {
  const t = line.trim();
  return t.length > 60 ? `${t.slice(0, 60)}...` : t;
}

function labelError(ctx: LineContext, path: string, message: string, remedy: string): HarnessError {
  return new HarnessError('LABEL_INVALID', message, { location: { file: ctx.file, line: ctx.line, path }, remedy });
}

/** A validated label document id (non-empty string or finite number), normalised. */
function labelDoc(v: string | number): string {
  return normaliseDocId(typeof v === 'number' ? String(v) : v);
}

/** Records a label at the highest grade; a repeat of the same document warns once per repeat. */
function putLabel(
  into: Record<string, number>,
  doc: string,
  grade: number,
  id: string,
  what: string,
  ctx: LineContext,
): void {
  const prev = into[doc];
  if (prev === undefined) {
    into[doc] = grade;
    return;
  }
  into[doc] = Math.max(prev, grade);
  ctx.warnings.push(
    `${ctx.file}:${ctx.line}: question ${id} names ${doc} twice in "${what}"; counted once at grade ${into[doc]}`,
  );
}


function parseRelevant(
  v: QuestionLine['relevant'],
  id: string,
  ctx: LineContext,
  dangling: Dangling[],
): Record<string, number> {
  const out = Object.create(null) as Record<string, number>; // keyed by user ids: no prototype
  if (v === undefined) return out;
  if (Array.isArray(v)) {
    for (const item of v) putLabel(out, labelDoc(item), 1, id, 'relevant', ctx);
  } else {
    for (const [rawDoc, grade] of Object.entries(v)) putLabel(out, labelDoc(rawDoc), grade, id, 'relevant', ctx);
  }
  for (const [doc, grade] of Object.entries(out)) {
    if (!ctx.docs.has(doc)) dangling.push({ doc, kind: 'relevant', grade });
  }
  return out;
}

function parseEvidence(
  v: readonly EvidenceLine[] | undefined,
  id: string,
  ctx: LineContext,
  dangling: Dangling[],
): EvidenceSpan[] {
  if (v === undefined) return [];
  const spans: EvidenceSpan[] = [];
  v.forEach((e, i) => {
    const path = `evidence[${i}]`;
    const doc = labelDoc(e.doc);
    const grade = e.grade ?? 1;
    const target = ctx.docs.get(doc);
    if (target === undefined) {
      // The shape is valid (the schema checked it); the span cannot be located, the policy decides about the label.
      dangling.push({ doc, kind: 'evidence', grade });
      return;
    }
    if (e.quote === undefined) {
      const start = e.start as number;
      const end = e.end as number;
      if (end > target.text.length) throw rangeError(ctx, id, doc, path, start, end, target.text.length);
      spans.push({ doc, start, end, grade });
      return;
    }
    const quote = e.quote;
    let norm = ctx.normCache.get(doc);
    if (norm === undefined) {
      norm = normaliseWithMap(target.text);
      ctx.normCache.set(doc, norm);
    }
    const occurrence = e.occurrence;
    const loc = locateQuote(norm, quote, occurrence);
    if ('error' in loc) {
      const words = firstWords(quote);
      if (loc.error === 'ambiguous') {
        throw labelError(ctx, `${path}.quote`,
          `question ${id}: quote "${words}" occurs ${loc.count} times in ${doc}`,
          `add "occurrence": n (1 to ${loc.count}) to pick one, or give "start" and "end" instead of "quote"`);
      }
      throw labelError(ctx, `${path}.quote`,
        loc.count === 0
          ? `question ${id}: quote "${words}" not found in ${doc}`
          : `question ${id}: quote "${words}" occurs ${loc.count} time${loc.count > 1 ? 's' : ''} in ${doc}, occurrence ${occurrence} asked`,
        loc.count === 0
          ? 'copy the passage exactly as it appears in the document (whitespace may differ, nothing else)'
          : `use an occurrence from 1 to ${loc.count}`);
    }
    spans.push({ doc, start: loc.start, end: loc.end, grade, quote });
  });
  // Identical spans collapse (highest grade), like repeated documents in a label list.
  const seen = new Map<string, EvidenceSpan>();
  const out: EvidenceSpan[] = [];
  for (const s of spans) {
    const k = `${s.doc}\u0000${s.start}\u0000${s.end}`;
    const prev = seen.get(k);
    if (prev === undefined) {
      seen.set(k, s);
      out.push(s);
    } else {
      prev.grade = Math.max(prev.grade, s.grade);
      ctx.warnings.push(
        `${ctx.file}:${ctx.line}: question ${id} gives the span [${s.start}, ${s.end}) of ${s.doc} twice; counted once at grade ${prev.grade}`,
      );
    }
  }
  return out;
}

function firstWords(quote: string): string {
  const words = quote.trim().split(/\s+/);
  return words.length > 8 ? `${words.slice(0, 8).join(' ')} ...` : words.join(' ');
}


function parseChunks(
  v: QuestionLine['chunks'],
  id: string,
  ctx: LineContext,
  dangling: Dangling[],
): Record<string, number> | undefined {
  if (v === undefined) return undefined;
  const out = Object.create(null) as Record<string, number>; // keyed by user ids: no prototype
  for (const [rawChunk, grade] of Object.entries(v)) {
    const hash = rawChunk.lastIndexOf('#');
    const chunkId = `${normaliseDocId(rawChunk.slice(0, hash))}#${rawChunk.slice(hash + 1)}`;
    putLabel(out, chunkId, grade, id, 'chunks', ctx);
  }
  for (const [chunkId, grade] of Object.entries(out)) {
    const doc = chunkId.slice(0, chunkId.lastIndexOf('#'));
    if (!ctx.docs.has(doc)) dangling.push({ doc, kind: 'chunks', grade, chunkId });
  }
  return out;
}


/** Text and labels in a form where equal means "exact copy" (object key order ignored; tags not included). */
function canonicalKey(q: Question, dangling: Dangling[]): string {
  const sorted = (r: Record<string, number> | undefined) =>
    r === undefined ? null : Object.entries(r).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return JSON.stringify([
    q.text,
    sorted(q.relevant),
    q.evidence.map((s) => [s.doc, s.start, s.end, s.grade]),
    dangling.filter((d) => d.kind === 'evidence').map((d) => [d.doc, d.grade]),
    sorted(q.chunkLabels),
  ]);
}

/**
 * Applies the dangling-label policy to the collapsed questions, then derives document relevance from evidence.
 * strict: one LABEL_INVALID listing every dangling label. keep/drop: one warning per label.
 */
function applyDanglingPolicy(order: Draft[], policy: LabelPolicy, file: string, warnings: string[], suggest: (doc: string) => DocSuggestion | null): void {
  const all: { draft: Draft; d: Dangling }[] = [];
  for (const draft of order) for (const d of draft.dangling) all.push({ draft, d });
  // "did you mean" for the first labels listed (each is a search of the corpus's ids).
  const hints = new Map<string, string>();
  const hint = (doc: string): string => {
    if (!hints.has(doc)) {
      const s = hints.size < 20 ? suggest(doc) : null;
      hints.set(doc, s === null ? '' : `; did you mean ${s.id}? ${s.why}`);
    }
    return hints.get(doc)!;
  };
  if (all.length > 0 && policy === 'strict') {
    const listed = [...new Set(all.map(({ draft, d }) => `${draft.question.id} -> ${d.doc} not found in corpus (line ${draft.lines[0]}${hint(d.doc)})`))];
    throw new HarnessError(
      'LABEL_INVALID',
      `${listed.length} label${listed.length > 1 ? 's name documents' : ' names a document'} not in the corpus: ${listed.join('; ')}`,
      {
        location: { file, line: all[0].draft.lines[0] },
        remedy:
          'fix the document ids (paths relative to docs/ with forward slashes), or set the dataset option ' +
          'labels: keep (count them as unretrievable, trec_eval style) or labels: drop (remove them)',
      },
    );
  }
  for (const { draft, d } of all) {
    const q = draft.question;
    const what = d.kind === 'chunks' ? `chunk label ${d.chunkId}` : d.kind === 'evidence' ? 'evidence label' : 'label';
    if (policy === 'drop') {
      if (d.kind === 'relevant') delete q.relevant[d.doc];
      if (d.kind === 'chunks' && q.chunkLabels !== undefined && d.chunkId !== undefined) delete q.chunkLabels[d.chunkId];
      warnings.push(`${file}:${draft.lines[0]}: ${q.id} -> ${d.doc} not found in corpus${hint(d.doc)}; ${what} dropped (labels: drop)`);
    } else {
      warnings.push(
        `${file}:${draft.lines[0]}: ${q.id} -> ${d.doc} not found in corpus${hint(d.doc)}; ${what} kept as unretrievable, lowering recall (labels: keep)` +
          (d.kind === 'evidence' ? '; its span cannot be located and only the document-level label is kept' : ''),
      );
    }
  }
  for (const draft of order) {
    const q = draft.question;
    const fromEvidence = new Map<string, number>();
    for (const s of q.evidence) fromEvidence.set(s.doc, Math.max(fromEvidence.get(s.doc) ?? 0, s.grade));
    if (policy === 'keep') {
      for (const d of draft.dangling) {
        if (d.kind === 'evidence') fromEvidence.set(d.doc, Math.max(fromEvidence.get(d.doc) ?? 0, d.grade));
      }
    }
    for (const [doc, grade] of fromEvidence) {
      const given = q.relevant[doc];
      if (given === undefined) q.relevant[doc] = grade;
      else if (given < grade) {
        warnings.push(
          `${file}:${draft.lines[0]}: question ${q.id} grades ${doc} ${given} in "relevant" but its evidence at ${grade}; the "relevant" grade ${given} is used`,
        );
      }
    }
  }
}
