/**
 * The shape of one questions.jsonl line as a zod schema ({@link questionLineSchema}), the single source of its
 * validation and of schema/question.schema.json, and the mapping of its issues to the loader's errors
 * ({@link lineIssueError}): the same codes, messages, key paths and remedies the hand-written checks gave.
 *
 * What the schema checks (types, key names, grade ranges, evidence forms); what it cannot check is left to
 * src/load/questions.ts: that label documents exist, where quotes occur, that a range fits its document's text.
 *
 * Key paths in messages and `location.path` use brackets for array indices: `relevant[1]`, `evidence[0].quote`;
 * object keys are joined with dots: `relevant.guide.md`, `chunks.refunds.md#2`.
 */
import { z } from 'zod';
import { nearestKey } from '../config/issues.js';
import { HarnessError } from '../errors.js';
import { MAX_GRADE } from '../score/grades.js';
import type { Doc } from '../types.js';

/** Normalises a label's document id like document ids: backslashes → `/`, every leading `./` removed. */
export function normaliseDocId(id: string): string {
  let s = id.replace(/\\/g, '/');
  while (s.startsWith('./')) s = s.slice(2);
  return s;
}

const nonEmpty = (s: string) => s.trim() !== '';

/** A label's document id: a non-empty string, or a finite number (read as its decimal text). */
const labelDocSchema = z.union([z.string().refine(nonEmpty), z.number().finite()]);

/** Judged grade: an integer from 0 (judged not relevant) to {@link MAX_GRADE}. */
const gradeSchema = z.number().int().min(0).max(MAX_GRADE);

/** `<docId>#<ordinal>`, ordinal a 0-based integer without leading zeros. */
export const CHUNK_ID_PATTERN = /^.+#(0|[1-9][0-9]*)$/;

function makeEvidenceSchema(strict: boolean) {
  const shape = {
    doc: labelDocSchema.describe('Document id (path relative to docs/).'),
    grade: z.number().int().min(1).max(MAX_GRADE).optional().describe(`Grade of the span, 1 to ${MAX_GRADE}; default 1.`),
    quote: z
      .string()
      .refine(nonEmpty)
      .optional()
      .describe('The passage, located in the document after whitespace normalisation.'),
    occurrence: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Which occurrence of the quote (1-based) when it appears several times.'),
    start: z.number().int().min(0).optional().describe('Range start, 0-based UTF-16 code units, inclusive.'),
    end: z.number().int().min(1).optional().describe('Range end, 0-based UTF-16 code units, exclusive.'),
  };
  return (strict ? z.strictObject(shape) : z.object(shape))
    .refine((e) => (e.quote !== undefined) !== (e.start !== undefined || e.end !== undefined), {
      params: { rule: 'quoteOrRange' },
    })
    .refine((e) => e.occurrence === undefined || e.quote !== undefined, { path: ['occurrence'] })
    .refine((e) => e.quote !== undefined || (e.start !== undefined && e.end !== undefined && e.start < e.end), {
      params: { rule: 'range' },
    })
    .describe('An evidence span: {doc, quote[, occurrence]} or {doc, start, end}; optional grade.');
}

function makeQuestionLineSchema(strict: boolean) {
  const shape = {
    id: z
      .union([z.string().refine(nonEmpty), z.number().finite()])
      .describe('Question id, unique in the file; a number is read as its decimal text.'),
    question: z.string().refine(nonEmpty).describe('The question text.'),
    tags: z.array(z.string()).optional().describe('Tags for per-tag breakdowns, e.g. ["paraphrase"].'),
    relevant: z
      .union([z.array(labelDocSchema), z.record(z.string().refine(nonEmpty), gradeSchema)])
      .optional()
      .describe(`Document id -> grade (0 = judged not relevant, up to ${MAX_GRADE}), or an array of ids (grade 1 each).`),
    evidence: z.array(makeEvidenceSchema(strict)).optional().describe('Evidence spans (see docs/evidence.md).'),
    chunks: z
      .record(z.string().regex(CHUNK_ID_PATTERN), gradeSchema)
      .optional()
      .describe('Chunk id (<docId>#<ordinal>) -> grade, for level: chunk.'),
  };
  return (strict ? z.strictObject(shape) : z.object(shape)).describe('One line of questions.jsonl.');
}

/**
 * zod (v4) schema of one questions.jsonl line (strict: an unknown key is an issue). Keys:
 * - `id`: non-empty string or finite number; `question`: non-empty string; `tags`: array of strings;
 * - `relevant`: document id → integer grade 0..100, or an array of document ids (grade 1 each);
 * - `evidence`: array of `{doc, quote, occurrence?, grade?}` or `{doc, start, end, grade?}` (grade 1..100,
 *   default 1; `0 ≤ start < end`, UTF-16 code units);
 * - `chunks`: `<docId>#<ordinal>` → integer grade 0..100.
 */
export const questionLineSchema = makeQuestionLineSchema(true);

/** The same shape with unknown keys dropped instead of refused (`dataset.strictness: warn`). */
export const questionLineSchemaLoose = makeQuestionLineSchema(false);

/** A line that passed {@link questionLineSchema}. */
export type QuestionLine = z.output<typeof questionLineSchema>;
/** One evidence entry of a {@link QuestionLine}. */
export type EvidenceLine = NonNullable<QuestionLine['evidence']>[number];

/** Keys of a line, in schema order. */
export const QUESTION_KEYS: readonly string[] = Object.keys(questionLineSchema.shape);
/** Keys of an evidence entry, in schema order. */
export const EVIDENCE_KEYS: readonly string[] = ['doc', 'grade', 'quote', 'occurrence', 'start', 'end'];

/** An unknown key found on a line: its key path (`relevent`, `evidence[0].qoute`) and the nearest known key. */
export interface UnknownKey {
  path: string;
  key: string;
  nearest: string | undefined;
  known: readonly string[];
}

/**
 * Keys other tools write for a line's known keys, too far from them for the edit-distance suggestion (`query` is 5
 * edits from `question`): BEIR and ir_datasets (`query`, `text`, `_id`, `query_id`, `qid`), TREC (`qrels`), and
 * common hand-written ones. Only used to suggest; the key is still unknown.
 */
export const QUESTION_KEY_SYNONYMS: Readonly<Record<string, string>> = Object.freeze({
  query: 'question',
  queries: 'question',
  text: 'question',
  query_text: 'question',
  qid: 'id',
  query_id: 'id',
  _id: 'id',
  qrels: 'relevant',
  labels: 'relevant',
  relevant_docs: 'relevant',
  positives: 'relevant',
  tag: 'tags',
});

/** The known key a line's unknown key most likely means: the nearest by edit distance, else a synonym. */
function suggestQuestionKey(k: string): string | undefined {
  return nearestKey(k, QUESTION_KEYS) ?? (Object.hasOwn(QUESTION_KEY_SYNONYMS, k.toLowerCase()) ? QUESTION_KEY_SYNONYMS[k.toLowerCase()] : undefined);
}

/** Every unknown key of a raw line object (top level and evidence entries), in order of appearance. */
export function unknownKeysOf(raw: Record<string, unknown>): UnknownKey[] {
  const out: UnknownKey[] = [];
  for (const k of Object.keys(raw)) {
    if (!QUESTION_KEYS.includes(k)) out.push({ path: k, key: k, nearest: suggestQuestionKey(k), known: QUESTION_KEYS });
  }
  if (Array.isArray(raw.evidence)) {
    raw.evidence.forEach((e: unknown, i) => {
      if (e === null || typeof e !== 'object' || Array.isArray(e)) return;
      for (const k of Object.keys(e)) {
        if (!EVIDENCE_KEYS.includes(k))
          out.push({ path: `evidence[${i}].${k}`, key: k, nearest: nearestKey(k, EVIDENCE_KEYS), known: EVIDENCE_KEYS });
      }
    });
  }
  return out;
}

/** Where a line sits, for error locations. */
export interface LineLocation {
  file: string;
  line: number;
  /** The corpus, to name a document's length in range errors. */
  docs: ReadonlyMap<string, Doc>;
}

/** Short JSON of a value for messages (at most 40 characters). */
export function short(v: unknown): string {
  const s = JSON.stringify(v);
  if (s === undefined) return String(v);
  return s.length > 40 ? `${s.slice(0, 40)}...` : s;
}

/** The question id as far as it can be read (for messages about other keys). */
function idOf(raw: Record<string, unknown>): string {
  const v = raw.id;
  return typeof v === 'number' ? String(v) : typeof v === 'string' ? v : '?';
}

type Issue = z.core.$ZodIssue;

/** The most specific issue: an `invalid_union` is replaced by the issue of the branch that got furthest. */
function specific(issue: Issue, base: PropertyKey[] = []): { issue: Issue; path: PropertyKey[] } {
  const path = [...base, ...(issue.path as PropertyKey[])];
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return { issue, path };
  let best: { issue: Issue; path: PropertyKey[] } | undefined;
  for (const branch of issue.errors) {
    if (branch.length === 0) continue;
    const cand = specific(branch[0], path);
    if (best === undefined || cand.path.length > best.path.length) best = cand;
  }
  return best !== undefined && best.path.length > path.length ? best : { issue, path };
}

function labelError(loc: LineLocation, path: string, message: string, remedy: string): HarnessError {
  return new HarnessError('LABEL_INVALID', message, { location: { file: loc.file, line: loc.line, path }, remedy });
}

const GRADE_REMEDY = `use 0 (not relevant), 1 (relevant), 2, 3 ... (more relevant), at most ${MAX_GRADE}`;

function gradeError(loc: LineLocation, id: string, doc: string, v: unknown, min: 0 | 1, path: string): HarnessError {
  return labelError(
    loc,
    path,
    `question ${id}: grade for ${doc} must be an integer from ${min} to ${MAX_GRADE}, got ${short(v)}`,
    min === 0 ? GRADE_REMEDY : `evidence grades are integers from 1 to ${MAX_GRADE} (default 1)`,
  );
}

function docNameError(loc: LineLocation, id: string, path: string, v: unknown): HarnessError {
  return labelError(
    loc,
    path,
    `question ${id}: ${path} names no document (${short(v)})`,
    'name documents by their path relative to the docs folder, e.g. "faq/payments.md"',
  );
}

/** The error for an unknown key under `dataset.strictness: strict`. */
export function unknownKeyError(u: UnknownKey, id: string, loc: LineLocation): HarnessError {
  const near = u.nearest === undefined ? '' : ` (did you mean "${u.nearest}"?)`;
  return new HarnessError('QUESTIONS_INVALID', `question ${id}: unknown key "${u.path}"${near}; known keys: ${u.known.join(', ')}`, {
    location: { file: loc.file, line: loc.line, path: u.path },
    remedy:
      `rename the key${u.nearest === undefined ? '' : ` to "${u.nearest}"`} or remove it; for datasets written by other tools, ` +
      'set dataset.strictness: warn in the config to ignore unknown keys with a warning',
  });
}

/**
 * The loader's error for the first issue of a line that failed {@link questionLineSchema}.
 * `QUESTIONS_INVALID` for `id`, `question`, `tags` and unknown keys; `LABEL_INVALID` for `relevant`, `evidence`
 * and `chunks`. Every error has `location: { file, line, path }`.
 */
export function lineIssueError(issues: readonly Issue[], raw: Record<string, unknown>, loc: LineLocation): HarnessError {
  const id = idOf(raw);
  if (issues.length === 0) throw new Error('unreachable: lineIssueError without issues');
  const { issue, path } = specific(issues[0]);
  if (issue.code === 'unrecognized_keys') {
    const first = unknownKeysOf(raw)[0];
    if (first !== undefined) return unknownKeyError(first, id, loc);
  }
  const [k0, k1, k2] = path;
  const where = (p: string) => ({ file: loc.file, line: loc.line, path: p });
  // A missing key the line holds under another name (`"query"` for `"question"`): say so with a did-you-mean.
  const insteadOf = (key: string): UnknownKey | undefined =>
    raw[key] === undefined ? unknownKeysOf(raw).find((u) => u.nearest === key && !u.path.includes('[')) : undefined;
  switch (k0) {
    case 'id': {
      const v = raw.id;
      const alt = insteadOf('id');
      if (alt !== undefined) return unknownKeyError(alt, id, loc);
      return new HarnessError(
        'QUESTIONS_INVALID',
        `key "id" is ${v === undefined ? 'missing' : `not a non-empty string or number (${short(v)})`}`,
        { location: where('id'), remedy: 'give every line a unique non-empty "id"' },
      );
    }
    case 'question': {
      const v = raw.question;
      const alt = insteadOf('question');
      if (alt !== undefined)
        return new HarnessError('QUESTIONS_INVALID', `question ${id}: key "question" is missing; the line has "${alt.key}" (did you mean "question"?)`, {
          location: where(alt.key),
          remedy: `rename "${alt.key}" to "question" (the question text); known keys: ${QUESTION_KEYS.join(', ')}`,
        });
      return new HarnessError(
        'QUESTIONS_INVALID',
        `question ${id}: key "question" is ${v === undefined ? 'missing' : `not a non-empty string (${short(v)})`}`,
        { location: where('question'), remedy: 'give every line a non-empty "question" string' },
      );
    }
    case 'tags':
      return new HarnessError('QUESTIONS_INVALID', `question ${id}: "tags" must be an array of strings, got ${short(raw.tags)}`, {
        location: where('tags'),
        remedy: 'write tags as ["paraphrase", "adversarial"] or leave the key out',
      });
    case 'relevant': {
      const v = raw.relevant;
      if (k1 === undefined) {
        return labelError(loc, 'relevant',
          `question ${id}: "relevant" must be an object (doc -> grade) or an array of doc ids, got ${short(v)}`,
          'write {"refunds.md": 2} or ["refunds.md"]');
      }
      if (Array.isArray(v)) return docNameError(loc, id, `relevant[${String(k1)}]`, v[k1 as number]);
      if (issue.code === 'invalid_key') return docNameError(loc, id, 'relevant', k1);
      const rawDoc = String(k1);
      return gradeError(loc, id, normaliseDocId(rawDoc), (v as Record<string, unknown>)[rawDoc], 0, `relevant.${rawDoc}`);
    }
    case 'evidence': {
      const v = raw.evidence;
      if (k1 === undefined) {
        return labelError(loc, 'evidence', `question ${id}: "evidence" must be an array, got ${short(v)}`,
          'write [{"doc": "refunds.md", "quote": "..."}]');
      }
      const p = `evidence[${String(k1)}]`;
      const item = (v as unknown[])[k1 as number];
      if (item === null || typeof item !== 'object' || Array.isArray(item)) {
        return labelError(loc, p, `question ${id}: ${p} must be an object, got ${short(item)}`,
          'write {"doc": "refunds.md", "quote": "..."} or {"doc": "refunds.md", "start": 0, "end": 40}');
      }
      const e = item as Record<string, unknown>;
      if (k2 === 'doc') return docNameError(loc, id, `${p}.doc`, e.doc);
      const doc = typeof e.doc === 'string' || typeof e.doc === 'number' ? normaliseDocId(String(e.doc)) : '?';
      if (k2 === 'grade') return gradeError(loc, id, doc, e.grade, 1, `${p}.grade`);
      if (k2 === 'quote') {
        return labelError(loc, `${p}.quote`, `question ${id}: ${p}.quote must be a non-empty string, got ${short(e.quote)}`,
          'copy the passage from the document into "quote"');
      }
      const hasQuote = e.quote !== undefined;
      const rule = issue.code === 'custom' ? (issue.params as { rule?: string } | undefined)?.rule : undefined;
      if (rule === 'quoteOrRange') {
        return labelError(loc, p,
          `question ${id}: ${p} (${doc}) must give either "quote" or "start" and "end"${hasQuote ? ', not both' : ''}`,
          'use {"doc", "quote"} to locate text, or {"doc", "start", "end"} for a raw character range');
      }
      if (k2 === 'occurrence') {
        return labelError(loc, `${p}.occurrence`,
          `question ${id}: ${p}.occurrence must be an integer >= 1 used with "quote", got ${short(e.occurrence)}`,
          '"occurrence": 2 picks the second place the quote appears');
      }
      // start / end of the wrong type or order
      const length = loc.docs.get(doc)?.text.length;
      return rangeError(loc, id, doc, p, e.start, e.end, length);
    }
    case 'chunks': {
      const v = raw.chunks;
      if (k1 === undefined) {
        return labelError(loc, 'chunks', `question ${id}: "chunks" must be an object (chunk id -> grade), got ${short(v)}`,
          'write {"refunds.md#2": 1}');
      }
      const rawChunk = String(k1);
      if (issue.code === 'invalid_key') {
        return labelError(loc, 'chunks', `question ${id}: chunk id ${JSON.stringify(rawChunk)} is not <docId>#<ordinal>`,
          'chunk ids look like "refunds.md#2" (0-based ordinal of the chunk in its document)');
      }
      const hash = rawChunk.lastIndexOf('#');
      const chunkId = `${normaliseDocId(rawChunk.slice(0, hash))}${rawChunk.slice(hash)}`;
      return gradeError(loc, id, chunkId, (v as Record<string, unknown>)[rawChunk], 0, `chunks.${rawChunk}`);
    }
    default:
      return new HarnessError('QUESTIONS_INVALID', `question ${id}: ${issue.message}`, {
        location: where(path.map(String).join('.')),
        remedy: 'see README.md ("questions.jsonl") for the line format',
      });
  }
}

/**
 * The error for an evidence range that is not `0 ≤ start < end ≤ length` (integers, UTF-16 code units).
 * @param length the document's text length, or undefined when the document is not in the corpus.
 */
export function rangeError(
  loc: LineLocation,
  id: string,
  doc: string,
  path: string,
  start: unknown,
  end: unknown,
  length: number | undefined,
): HarnessError {
  const len = length === undefined ? 'the text length' : String(length);
  return labelError(loc, path,
    `question ${id}: evidence range [${short(start)}, ${short(end)}) of ${doc} is invalid; need integers 0 <= start < end <= ${len}`,
    'start and end are 0-based character offsets (UTF-16 code units) into the document text, end exclusive');
}
