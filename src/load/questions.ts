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
 * - `relevant`: document id → integer grade ≥ 0 (0 = judged not relevant), or an array of ids (grade 1 each).
 * - `evidence`: spans given as a quote (located after whitespace normalisation, see evidence.ts; `occurrence` is the
 *   1-based occurrence to use when the quote appears several times) or as a raw character range `[start, end)` in
 *   UTF-16 code units, `0 ≤ start < end ≤ text length`. `grade` defaults to 1 and must be an integer ≥ 1.
 * - `chunks`: chunk id (`<docId>#<ordinal>`) → integer grade ≥ 0, stored as `Question.chunkLabels`.
 * - `tags`: array of strings.
 * Unknown keys are ignored with a warning. A question may have `relevant`, `evidence`, both or neither; questions with
 * no positive label are kept (the scorer excludes and reports them, field case M10).
 *
 * Document-level relevance is derived: `relevant` as given, plus every evidence document that is not already in
 * `relevant`, at the highest grade of its spans (a `relevant` grade, even 0, wins over the spans; a warning says so).
 *
 * Label ids are normalised like document ids (backslashes → `/`, leading `./` removed) and compared exactly; an
 * empty or missing label id is an error, so missing ids can never match each other (field case V02 notes).
 */
import { HarnessError } from '../errors.js';
import type { Doc, EvidenceSpan, Question } from '../types.js';
import { locateQuote, normaliseWithMap, type NormalisedText } from './evidence.js';

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
}

const KNOWN_KEYS = new Set(['id', 'question', 'relevant', 'evidence', 'chunks', 'tags']);
const EVIDENCE_KEYS = new Set(['doc', 'quote', 'occurrence', 'start', 'end', 'grade']);

/** Normalises a label's document id like document ids: backslashes → `/`, every leading `./` removed. */
export function normaliseDocId(id: string): string {
  let s = id.replace(/\\/g, '/');
  while (s.startsWith('./')) s = s.slice(2);
  return s;
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
 * @returns questions in file order (an exact duplicate keeps the position and line of its first entry) and
 *   warnings (`file:line: ...`), in order of discovery.
 * @throws HarnessError
 *   - `QUESTIONS_INVALID`: a line that is not a JSON object (names file:line and the start of the line); a
 *     missing/empty `id` or `question` (location.path names the key); `tags` not an array of strings; conflicting
 *     duplicate ids (names the id, the number of entries and their lines; exact copies collapse with the warning
 *     `duplicate question <id> collapsed`, field case V01).
 *   - `LABEL_INVALID`: a grade that is not an integer ≥ 0 (≥ 1 for evidence); a malformed label; an evidence quote
 *     that is absent (names the question, document and first words) or ambiguous (says how many times it occurs);
 *     a range outside the text; and, under `labels: 'strict'`, every label naming a document not in `docs`.
 */
export function parseQuestions(
  text: string,
  file: string,
  docs: ReadonlyMap<string, Doc>,
  opts: ParseQuestionsOptions = {},
): { questions: Question[]; warnings: string[] } {
  const policy: LabelPolicy = opts.labels ?? 'strict';
  const warnings: string[] = [];
  const unknownKeys = new Map<string, number[]>();
  const normCache = new Map<string, NormalisedText>();
  const byId = new Map<string, Draft>();
  const order: Draft[] = [];

  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const rawLines = body.split('\n');
  for (let i = 0; i < rawLines.length; i++) {
    const lineNo = i + 1;
    let line = rawLines[i];
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.trim() === '') continue;
    const ctx: LineContext = { file, line: lineNo, warnings, docs, normCache };

    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch (cause) {
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
    for (const k of Object.keys(rec)) if (!KNOWN_KEYS.has(k)) addUnknown(unknownKeys, k, lineNo);

    const id = parseId(rec.id, ctx);
    const qtext = rec.question;
    if (typeof qtext !== 'string' || qtext.trim() === '') {
      throw new HarnessError(
        'QUESTIONS_INVALID',
        `question ${id}: key "question" is ${qtext === undefined ? 'missing' : `not a non-empty string (${short(qtext)})`}`,
        { location: { file, line: lineNo, path: 'question' }, remedy: 'give every line a non-empty "question" string' },
      );
    }
    const tags = parseTags(rec.tags, id, ctx);
    const dangling: Dangling[] = [];
    const relevant = parseRelevant(rec.relevant, id, ctx, dangling);
    const evidence = parseEvidence(rec.evidence, id, ctx, dangling, unknownKeys);
    const chunkLabels = parseChunks(rec.chunks, id, ctx, dangling);

    const question: Question = { id, text: qtext, relevant, evidence, tags, line: lineNo };
    if (chunkLabels !== undefined) question.chunkLabels = chunkLabels;
    const key = canonicalKey(question, dangling);

    const prev = byId.get(id);
    if (prev === undefined) {
      const draft: Draft = { question, lines: [lineNo], key, dangling };
      byId.set(id, draft);
      order.push(draft);
      continue;
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
  }

  for (const [k, lines] of unknownKeys) {
    warnings.push(`${file}: unknown key "${k}" ignored on line${lines.length > 1 ? 's' : ''} ${lines.join(', ')}`);
  }

  applyDanglingPolicy(order, policy, file, warnings);
  return { questions: order.map((d) => d.question), warnings };
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

function short(v: unknown): string {
  const s = JSON.stringify(v);
  if (s === undefined) return String(v);
  return s.length > 40 ? `${s.slice(0, 40)}...` : s;
}

function addUnknown(map: Map<string, number[]>, key: string, line: number): void {
  const lines = map.get(key);
  if (lines === undefined) map.set(key, [line]);
  else if (lines[lines.length - 1] !== line) lines.push(line);
}

function parseId(v: unknown, ctx: LineContext): string {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'string' && v.trim() !== '') return v;
  throw new HarnessError(
    'QUESTIONS_INVALID',
    `key "id" is ${v === undefined ? 'missing' : `not a non-empty string or number (${short(v)})`}`,
    { location: { file: ctx.file, line: ctx.line, path: 'id' }, remedy: 'give every line a unique non-empty "id"' },
  );
}

function parseTags(v: unknown, id: string, ctx: LineContext): string[] {
  if (v === undefined) return [];
  if (Array.isArray(v) && v.every((t) => typeof t === 'string')) return [...new Set(v as string[])];
  throw new HarnessError('QUESTIONS_INVALID', `question ${id}: "tags" must be an array of strings, got ${short(v)}`, {
    location: { file: ctx.file, line: ctx.line, path: 'tags' },
    remedy: 'write tags as ["paraphrase", "adversarial"] or leave the key out',
  });
}

function labelError(ctx: LineContext, path: string, message: string, remedy: string): HarnessError {
  return new HarnessError('LABEL_INVALID', message, { location: { file: ctx.file, line: ctx.line, path }, remedy });
}

/** A label's document id: a non-empty string (or a finite number), normalised. */
function labelDoc(v: unknown, id: string, ctx: LineContext, path: string): string {
  const s = typeof v === 'number' && Number.isFinite(v) ? String(v) : v;
  if (typeof s === 'string' && s.trim() !== '') return normaliseDocId(s);
  throw labelError(
    ctx,
    path,
    `question ${id}: ${path} names no document (${short(v)})`,
    'name documents by their path relative to the docs folder, e.g. "faq/payments.md"',
  );
}

function checkGrade(v: unknown, min: 0 | 1, id: string, doc: string, ctx: LineContext, path: string): number {
  if (typeof v === 'number' && Number.isInteger(v) && v >= min) return v;
  throw labelError(
    ctx,
    path,
    `question ${id}: grade for ${doc} must be an integer >= ${min}, got ${short(v)}`,
    min === 0 ? 'use 0 (not relevant), 1 (relevant), 2, 3 ... (more relevant)' : 'evidence grades are integers >= 1 (default 1)',
  );
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

function parseRelevant(v: unknown, id: string, ctx: LineContext, dangling: Dangling[]): Record<string, number> {
  const out: Record<string, number> = {};
  if (v === undefined) return out;
  if (Array.isArray(v)) {
    v.forEach((item, i) => putLabel(out, labelDoc(item, id, ctx, `relevant[${i}]`), 1, id, 'relevant', ctx));
  } else if (v !== null && typeof v === 'object') {
    for (const [rawDoc, grade] of Object.entries(v as Record<string, unknown>)) {
      const doc = labelDoc(rawDoc, id, ctx, 'relevant');
      putLabel(out, doc, checkGrade(grade, 0, id, doc, ctx, `relevant.${rawDoc}`), id, 'relevant', ctx);
    }
  } else {
    throw labelError(
      ctx,
      'relevant',
      `question ${id}: "relevant" must be an object (doc -> grade) or an array of doc ids, got ${short(v)}`,
      'write {"refunds.md": 2} or ["refunds.md"]',
    );
  }
  for (const [doc, grade] of Object.entries(out)) {
    if (!ctx.docs.has(doc)) dangling.push({ doc, kind: 'relevant', grade });
  }
  return out;
}

function parseEvidence(
  v: unknown,
  id: string,
  ctx: LineContext,
  dangling: Dangling[],
  unknownKeys: Map<string, number[]>,
): EvidenceSpan[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) {
    throw labelError(ctx, 'evidence', `question ${id}: "evidence" must be an array, got ${short(v)}`,
      'write [{"doc": "refunds.md", "quote": "..."}]');
  }
  const spans: EvidenceSpan[] = [];
  v.forEach((item, i) => {
    const path = `evidence[${i}]`;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      throw labelError(ctx, path, `question ${id}: ${path} must be an object, got ${short(item)}`,
        'write {"doc": "refunds.md", "quote": "..."} or {"doc": "refunds.md", "start": 0, "end": 40}');
    }
    const e = item as Record<string, unknown>;
    for (const k of Object.keys(e)) if (!EVIDENCE_KEYS.has(k)) addUnknown(unknownKeys, `evidence[].${k}`, ctx.line);
    const doc = labelDoc(e.doc, id, ctx, `${path}.doc`);
    const grade = e.grade === undefined ? 1 : checkGrade(e.grade, 1, id, doc, ctx, `${path}.grade`);
    const hasQuote = e.quote !== undefined;
    const hasRange = e.start !== undefined || e.end !== undefined;
    if (hasQuote === hasRange) {
      throw labelError(ctx, path,
        `question ${id}: ${path} (${doc}) must give either "quote" or "start" and "end"${hasQuote ? ', not both' : ''}`,
        'use {"doc", "quote"} to locate text, or {"doc", "start", "end"} for a raw character range');
    }
    if (hasQuote && (typeof e.quote !== 'string' || e.quote.trim() === '')) {
      throw labelError(ctx, `${path}.quote`, `question ${id}: ${path}.quote must be a non-empty string, got ${short(e.quote)}`,
        'copy the passage from the document into "quote"');
    }
    if (e.occurrence !== undefined && (!hasQuote || !(Number.isInteger(e.occurrence) && (e.occurrence as number) >= 1))) {
      throw labelError(ctx, `${path}.occurrence`,
        `question ${id}: ${path}.occurrence must be an integer >= 1 used with "quote", got ${short(e.occurrence)}`,
        '"occurrence": 2 picks the second place the quote appears');
    }
    const target = ctx.docs.get(doc);
    if (target === undefined) {
      // Validated as far as possible; the span cannot be located, the policy decides about the label.
      if (hasRange) checkRangeShape(e.start, e.end, id, doc, ctx, path, Number.POSITIVE_INFINITY);
      dangling.push({ doc, kind: 'evidence', grade });
      return;
    }
    if (hasRange) {
      checkRangeShape(e.start, e.end, id, doc, ctx, path, target.text.length);
      spans.push({ doc, start: e.start as number, end: e.end as number, grade });
      return;
    }
    const quote = e.quote as string;
    let norm = ctx.normCache.get(doc);
    if (norm === undefined) {
      norm = normaliseWithMap(target.text);
      ctx.normCache.set(doc, norm);
    }
    const occurrence = e.occurrence as number | undefined;
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

function checkRangeShape(
  start: unknown,
  end: unknown,
  id: string,
  doc: string,
  ctx: LineContext,
  path: string,
  length: number,
): void {
  const ok =
    typeof start === 'number' && typeof end === 'number' && Number.isInteger(start) && Number.isInteger(end) &&
    start >= 0 && start < end && end <= length;
  if (ok) return;
  const len = Number.isFinite(length) ? String(length) : 'the text length';
  throw labelError(ctx, path,
    `question ${id}: evidence range [${short(start)}, ${short(end)}) of ${doc} is invalid; need integers 0 <= start < end <= ${len}`,
    'start and end are 0-based character offsets (UTF-16 code units) into the document text, end exclusive');
}

function firstWords(quote: string): string {
  const words = quote.trim().split(/\s+/);
  return words.length > 8 ? `${words.slice(0, 8).join(' ')} ...` : words.join(' ');
}

function parseChunks(
  v: unknown,
  id: string,
  ctx: LineContext,
  dangling: Dangling[],
): Record<string, number> | undefined {
  if (v === undefined) return undefined;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw labelError(ctx, 'chunks', `question ${id}: "chunks" must be an object (chunk id -> grade), got ${short(v)}`,
      'write {"refunds.md#2": 1}');
  }
  const out: Record<string, number> = {};
  for (const [rawChunk, grade] of Object.entries(v as Record<string, unknown>)) {
    const hash = rawChunk.lastIndexOf('#');
    const ordinal = hash === -1 ? '' : rawChunk.slice(hash + 1);
    if (hash <= 0 || !/^(0|[1-9][0-9]*)$/.test(ordinal)) {
      throw labelError(ctx, 'chunks', `question ${id}: chunk id ${JSON.stringify(rawChunk)} is not <docId>#<ordinal>`,
        'chunk ids look like "refunds.md#2" (0-based ordinal of the chunk in its document)');
    }
    const doc = normaliseDocId(rawChunk.slice(0, hash));
    const chunkId = `${doc}#${ordinal}`;
    putLabel(out, chunkId, checkGrade(grade, 0, id, chunkId, ctx, `chunks.${rawChunk}`), id, 'chunks', ctx);
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
function applyDanglingPolicy(order: Draft[], policy: LabelPolicy, file: string, warnings: string[]): void {
  const all: { draft: Draft; d: Dangling }[] = [];
  for (const draft of order) for (const d of draft.dangling) all.push({ draft, d });
  if (all.length > 0 && policy === 'strict') {
    const listed = [...new Set(all.map(({ draft, d }) => `${draft.question.id} -> ${d.doc} not found in corpus (line ${draft.lines[0]})`))];
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
      warnings.push(`${file}:${draft.lines[0]}: ${q.id} -> ${d.doc} not found in corpus; ${what} dropped (labels: drop)`);
    } else {
      warnings.push(
        `${file}:${draft.lines[0]}: ${q.id} -> ${d.doc} not found in corpus; ${what} kept as unretrievable, lowering recall (labels: keep)` +
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
