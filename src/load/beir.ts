/**
 * Reading a dataset in the BEIR layout (Thakur et al. 2021):
 * ```
 * <root>/corpus.jsonl        {"_id": "4983", "title": "...", "text": "..."} one a line
 * <root>/queries.jsonl       {"_id": "1", "text": "..."} one a line
 * <root>/qrels/<split>.tsv   query-id<TAB>corpus-id<TAB>score, with or without a header line
 * ```
 * - Doc.text = `title + "\n\n" + text` when the title is non-empty, else `text`. Docs are sorted by id (code units).
 * - Only queries named in the qrels become questions, in the order of queries.jsonl (deterministic, and the order a
 *   reader of the file sees); `Question.line` is the query's 1-based line in queries.jsonl.
 * - The header is recognised by its score column: a first line whose third field is not an integer
 *   (scifact: `query-id corpus-id score`) is a header; trec-dl-2019-5k has none.
 * - Score = grade, an integer from 0 to 100 (src/score/grades.ts). A (query, doc) pair given twice counts once at its highest grade, with a warning.
 * - Dangling qrels rows follow the `labels` policy ({@link LabelPolicy}): a doc missing from the corpus is an error
 *   (`strict`), kept as an unretrievable label (`keep`) or removed (`drop`); a query missing from queries.jsonl is an
 *   error (`strict`) or, under both `keep` and `drop`, left out with a warning (a question without text cannot run).
 * - Warnings also name: documents with no text, with the questions they are relevant to (such a label can never be
 *   retrieved; Cranfield's documents 471 and 995, 995 relevant to query 125); the count of queries that no row of
 *   the split's qrels judges (left out; BEIR's queries.jsonl is shared by the splits); and lines that are not valid
 *   UTF-8 (decoded with U+FFFD, as before, so fingerprints do not change).
 * Files are streamed line by line (lines.ts: any size, exact 1-based line numbers, BOM and CRLF accepted); each line
 * is one `JSON.parse` or one `split('\t')`. A line is bounded ({@link MAX_CORPUS_LINE_BYTES} for corpus.jsonl,
 * {@link MAX_QUERY_LINE_BYTES} for queries.jsonl and the qrels): a longer one is an error naming the file, the line and
 * the limit, raised before the line is assembled. Only the parsed documents are held, never a whole file as one string
 * (V8 strings stop near 512 MB).
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { HarnessError, isHarnessError, type ErrorCode } from '../errors.js';
import { isValidGrade, MAX_GRADE } from '../score/grades.js';
import type { Doc, Question } from '../types.js';
import { DOCUMENT_UNREADABLE } from './documents.js';
import { forEachLine, formatBytes, LineTooLongError } from './lines.js';
import { MAX_QUESTION_LINE_BYTES, type LabelPolicy } from './questions.js';
import { minOf } from '../bounded.js';
import { createTextStore, StoredDoc, type TextStore } from './text-store.js';
import { StreamingFingerprints, type DatasetFingerprints } from './fingerprint.js';
import { IdIndex } from '../id-index.js';

/** Options of {@link loadBeir}. */
export interface LoadBeirOptions {
  /** Dangling-label policy, default `strict`. */
  labels?: LabelPolicy;
  /** Bytes read at a time from each file; default 1 MiB (tests pass tiny values to cut lines across reads). */
  highWaterMark?: number;
  /**
   * Where documents go when the corpus is large (issue 25 item 1): when corpus.jsonl has more than `residentBytes`
   * bytes (its size on disk, read before loading), the texts are streamed into a text store in `dir`
   * (src/load/text-store.ts) and the docs are `StoredDoc`s. Default: documents in memory whatever their size.
   */
  textStore?: TextStorePlacement;
}

/** Where a loader may put documents' texts: see {@link LoadBeirOptions.textStore}. */
export interface TextStorePlacement {
  /** Folder of the store file (the sweep's `<cacheDir>/texts`). */
  dir: string;
  /** Largest corpus file, bytes, whose documents stay in memory (`documentResidentBytes` of `limits.memory`). */
  residentBytes: number;
  /** The store's read buffer, bytes (even, ≥ 2); default 64 KiB. For tests. */
  readBufferBytes?: number;
}

/**
 * Loads `<root>/corpus.jsonl`, `<root>/queries.jsonl` and `<root>/qrels/<split>.tsv`.
 * @returns docs sorted by id, judged questions in queries.jsonl order (`relevant` from the qrels, no evidence, no
 *   tags), warnings, and `fingerprints`: `fingerprintDataset(docs, questions)` and `fingerprintCorpus(docs)` hashed
 *   while the corpus streamed (src/load/fingerprint.ts {@link StreamingFingerprints}), or undefined when corpus.jsonl
 *   does not list its documents in increasing id order (code-unit order; then compute `fingerprintBoth`).
 * @throws HarnessError `DATASET_NOT_FOUND` (a missing file; for a missing split, lists the splits present),
 *   `DATASET_EMPTY` (empty corpus), {@link DOCUMENT_UNREADABLE} (a corpus line that is not a JSON object with a
 *   non-empty `_id` and a string `text`, or two different documents with one `_id`), `QUESTIONS_INVALID` (the same
 *   for queries.jsonl), `QRELS_INVALID` (a row without 3 tab-separated fields or with a score that is not an
 *   integer ≥ 0), `LABEL_INVALID` (dangling rows under `strict`, all listed).
 */
export async function loadBeir(
  root: string,
  split: string,
  opts: LoadBeirOptions = {},
): Promise<{ docs: Doc[]; questions: Question[]; warnings: string[]; fingerprints: DatasetFingerprints | undefined }> {
  const policy: LabelPolicy = opts.labels ?? 'strict';
  const warnings: string[] = [];
  const corpusFile = path.join(root, 'corpus.jsonl');
  const queriesFile = path.join(root, 'queries.jsonl');
  const qrelsFile = path.join(root, 'qrels', `${split}.tsv`);
  await mustBeFile(corpusFile);
  await mustBeFile(queriesFile);
  await checkQrels(root, split, qrelsFile);
  const read = { highWaterMark: opts.highWaterMark };

  const placement = opts.textStore;
  const store =
    placement !== undefined && (await stat(corpusFile)).size > placement.residentBytes
      ? createTextStore(placement.dir, placement.readBufferBytes === undefined ? {} : { readBufferBytes: placement.readBufferBytes })
      : undefined;
  try {
    return await loadWith(store);
  } catch (e) {
    store?.remove();
    throw e;
  }

  async function loadWith(
    store: TextStore | undefined,
  ): Promise<{ docs: Doc[]; questions: Question[]; warnings: string[]; fingerprints: DatasetFingerprints | undefined }> {
    const streamed = new StreamingFingerprints();
    // a corpus bound for the text store is read around the page cache (lines.ts `direct`), which the store then has to itself
    const corpus = await parseCorpus(corpusFile, warnings, { ...read, direct: store !== undefined }, store, streamed);
    store?.flush();
    const docs = corpus.docs;
    // the loader's own table of ids (load order), not a second one (at 10M documents building another took 2.4 s)
    const docIds = corpus.byId;
    const queries = await parseQueries(queriesFile, warnings, read);
    const qrels = await parseQrels(qrelsFile, warnings, read);

    // Dangling rows.
    const missingQueries: { qid: string; line: number }[] = [];
    const missingDocs: { qid: string; doc: string; line: number }[] = [];
    for (const [qid, judged] of qrels) {
      if (!queries.has(qid)) {
        missingQueries.push({ qid, line: judged.firstLine });
        continue;
      }
      for (const [doc, j] of judged.docs) if (!docIds.has(doc)) missingDocs.push({ qid, doc, line: j.line });
  }
  if (policy === 'strict' && missingQueries.length + missingDocs.length > 0) {
    const listed = [
      ...missingQueries.map((m) => `query ${m.qid} not found in ${path.basename(queriesFile)} (line ${m.line})`),
      ...missingDocs.map((m) => `${m.qid} -> ${m.doc} not found in corpus (line ${m.line})`),
    ];
    throw new HarnessError(
      'LABEL_INVALID',
      `${listed.length} qrels row${listed.length > 1 ? 's name' : ' names'} a missing query or document: ${listed.join('; ')}`,
      {
        location: { file: qrelsFile, line: Math.min(minOf(missingQueries.map((m) => m.line)), minOf(missingDocs.map((m) => m.line))) },
        remedy:
          'use the qrels that belong to this corpus, or set the dataset option labels: keep (count missing documents ' +
          'as unretrievable, trec_eval style) or labels: drop (remove them); missing queries are left out under both',
      },
    );
  }
  for (const m of missingQueries) {
    warnings.push(`${qrelsFile}:${m.line}: query ${m.qid} not found in queries.jsonl; its judgements are left out (labels: ${policy})`);
  }
  for (const m of missingDocs) {
    warnings.push(
      policy === 'keep'
        ? `${qrelsFile}:${m.line}: ${m.qid} -> ${m.doc} not found in corpus; label kept as unretrievable, lowering recall (labels: keep)`
        : `${qrelsFile}:${m.line}: ${m.qid} -> ${m.doc} not found in corpus; label dropped (labels: drop)`,
    );
  }

  const questions: Question[] = [];
  let unjudged = 0;
  for (const [qid, q] of queries) {
    const judged = qrels.get(qid);
    if (judged === undefined) {
      unjudged++;
      continue;
    }
    const relevant = Object.create(null) as Record<string, number>; // any document id, __proto__ included
    for (const [doc, j] of judged.docs) {
      if (policy === 'drop' && !docIds.has(doc)) continue;
      relevant[doc] = j.grade;
    }
    questions.push({ id: qid, text: q.text, relevant, evidence: [], tags: [], line: q.line });
  }
  if (unjudged > 0) {
    warnings.push(
      `${queriesFile}: ${unjudged} of ${queries.size} queries have no judgement in qrels/${split}.tsv and are left out ` +
        '(BEIR shares queries.jsonl between splits; each split judges its own queries)',
    );
  }
  for (const e of corpus.empty) warnings.push(emptyDocumentWarning(corpusFile, e, questions));
  return { docs, questions, warnings, fingerprints: streamed.finish(questions) };
  }
}

/** The warning for a document with no text: where it is, and the questions that judge it (which can never find it). */
function emptyDocumentWarning(file: string, e: { id: string; line: number }, questions: readonly Question[]): string {
  const judging = questions.filter((q) => q.relevant[e.id] !== undefined);
  const relevant = judging.filter((q) => q.relevant[e.id] > 0);
  const list = (qs: Question[]): string =>
    qs.slice(0, 10).map((q) => `${q.id} (grade ${q.relevant[e.id]})`).join(', ') + (qs.length > 10 ? `, ... (${qs.length - 10} more)` : '');
  const head = `${file}:${e.line}: document ${e.id} has no text (kept; it yields no chunks and is never retrieved)`;
  if (relevant.length > 0) return `${head}; relevant to ${relevant.length} question(s), which cannot find it: ${list(relevant)}`;
  if (judging.length > 0) return `${head}; judged not relevant (grade 0) for ${judging.length} question(s): ${list(judging)}`;
  return `${head}; no question judges it`;
}

async function mustBeFile(file: string): Promise<void> {
  let isFile = false;
  let cause: unknown;
  try {
    isFile = (await stat(file)).isFile();
  } catch (e) {
    cause = e;
  }
  if (!isFile) {
    throw new HarnessError('DATASET_NOT_FOUND', `BEIR file ${file} ${cause === undefined ? 'is not a file' : 'cannot be read'}`, {
      location: { file },
      remedy: 'a BEIR dataset folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv',
      ...(cause === undefined ? {} : { cause }),
    });
  }
}

async function checkQrels(root: string, split: string, file: string): Promise<void> {
  const st = await stat(file).catch(() => undefined);
  if (st?.isFile()) return;
  const present = await readdir(path.join(root, 'qrels')).catch(() => [] as string[]);
  const splits = present.filter((f) => f.endsWith('.tsv')).map((f) => f.slice(0, -4)).sort();
  throw new HarnessError('DATASET_NOT_FOUND', `qrels for split "${split}" not found: ${file}`, {
    location: { file },
    remedy: splits.length > 0 ? `use one of the splits present: ${splits.join(', ')}` : 'add qrels/<split>.tsv',
  });
}

/**
 * Streams `file` (lines.ts) and calls `fn(line, lineNo)` for each non-blank line (1-based numbers; trailing `\r`
 * removed; a leading BOM dropped). Lines that are not valid UTF-8 are decoded with U+FFFD and listed in one warning.
 * @throws what `fn` throws, unchanged; `DATASET_NOT_FOUND` naming the file and the last line read when the file
 *   system fails part way.
 */
async function eachLine(
  file: string,
  warnings: string[],
  read: Read,
  limit: LineLimit,
  fn: (line: string, lineNo: number) => void,
): Promise<void> {
  const invalid: number[] = [];
  let reached = 0;
  try {
    await forEachLine(
      file,
      (line, lineNo, utf8) => {
        reached = lineNo;
        if (!utf8) invalid.push(lineNo);
        if (line.trim() !== '') fn(line, lineNo);
      },
      { maxLineBytes: limit.bytes, direct: read.direct === true, ...(read.highWaterMark !== undefined ? { highWaterMark: read.highWaterMark } : {}) },
    );
  } catch (cause) {
    if (isHarnessError(cause)) throw cause;
    if (cause instanceof LineTooLongError) {
      throw new HarnessError(limit.code, `line ${cause.lineNo} is longer than ${formatBytes(cause.limit)} (the limit of a ${limit.what} line)`, {
        location: { file, line: cause.lineNo },
        remedy: `write one ${limit.what} entry a line (JSON Lines / one row a line); check that the file has line breaks`,
        cause,
      });
    }
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new HarnessError('DATASET_NOT_FOUND', `BEIR file ${file} cannot be read${reached > 0 ? ` after line ${reached}` : ''}: ${why}`, {
      location: reached > 0 ? { file, line: reached } : { file },
      remedy: 'a BEIR dataset folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv as readable files',
      cause,
    });
  }
  if (invalid.length > 0) {
    const shown = invalid.slice(0, 10).join(', ') + (invalid.length > 10 ? `, ... (${invalid.length - 10} more)` : '');
    warnings.push(`${file}: ${invalid.length} line(s) not valid UTF-8 (invalid bytes read as U+FFFD): line ${shown}; convert the file to UTF-8`);
  }
}

function parseObject(line: string, file: string, lineNo: number, code: 'QUESTIONS_INVALID' | typeof DOCUMENT_UNREADABLE): Record<string, unknown> {
  let obj: unknown;
  try {
    obj = JSON.parse(line);
  } catch (cause) {
    throw new HarnessError(code, `line ${lineNo} is not valid JSON: ${line.slice(0, 60)}`, {
      location: { file, line: lineNo },
      remedy: 'write one JSON object per line (JSON Lines)',
      cause,
    });
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new HarnessError(code, `line ${lineNo} is not a JSON object: ${line.slice(0, 60)}`, {
      location: { file, line: lineNo },
      remedy: 'write one JSON object per line (JSON Lines)',
    });
  }
  return obj as Record<string, unknown>;
}

function idOf(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'string' && v !== '') return v;
  return undefined;
}

/** How a BEIR file is read: lines.ts's chunk bytes and, for a corpus bound for the text store, `direct` (`O_DIRECT`). */
type Read = { highWaterMark?: number | undefined; direct?: boolean };

/** The longest line of a BEIR file: its bytes, the code of the error, the file's kind in the message. */
interface LineLimit {
  bytes: number;
  code: ErrorCode;
  what: string;
}

/** Longest corpus.jsonl line: 256 MiB (one document; V8 strings stop near 512 MB and JSON.parse needs a copy). */
export const MAX_CORPUS_LINE_BYTES = 256 << 20;
/** Longest queries.jsonl or qrels line: {@link MAX_QUESTION_LINE_BYTES} (16 MiB). */
export const MAX_QUERY_LINE_BYTES = MAX_QUESTION_LINE_BYTES;

async function parseCorpus(
  file: string,
  warnings: string[],
  read: Read,
  store: TextStore | undefined,
  fingerprints: StreamingFingerprints,
): Promise<{ docs: Doc[]; byId: IdIndex; empty: { id: string; line: number }[] }> {
  // Documents in load order as their ids (`ids[i]`; a stored one's text is text `i` of the store, a resident one's is
  // `texts[i]`), the line each came from, and their ids' table (a Map of ids could not hold more than 2^24 documents:
  // src/id-index.ts). The document objects are made once the file is read: while it streams, every young-generation
  // collection costs more the more objects the heap already holds (measured: 1.05 against 2.70 ms a scavenge of the
  // same young workload beside 1M and 10M retained objects of this shape), and the parse makes most of the garbage.
  const ids: string[] = [];
  const texts: string[] | undefined = store === undefined ? [] : undefined;
  // the store's index of document i (load order): it hands out 0, 1, 2, ... from the texts it already held
  const first = store?.size ?? 0;
  const lines: number[] = [];
  const byId = new IdIndex((i) => ids[i]);
  const empty: { id: string; line: number }[] = [];
  await eachLine(file, warnings, read, { bytes: MAX_CORPUS_LINE_BYTES, code: DOCUMENT_UNREADABLE, what: 'corpus.jsonl' }, (line, lineNo) => {
    const o = parseObject(line, file, lineNo, DOCUMENT_UNREADABLE);
    const id = idOf(o._id);
    const title = o.title === undefined || o.title === null ? '' : o.title;
    if (id === undefined || typeof o.text !== 'string' || typeof title !== 'string') {
      throw new HarnessError(
        DOCUMENT_UNREADABLE,
        `line ${lineNo}: a corpus entry needs a non-empty "_id", a string "text" and an optional string "title"`,
        { location: { file, line: lineNo }, remedy: 'write {"_id": "d1", "title": "...", "text": "..."}' },
      );
    }
    const text = title !== '' ? `${title}\n\n${o.text}` : o.text;
    const prev = byId.add(id, ids.length);
    if (prev === -1) {
      // A stored document's text goes to the file now; only its id stays in memory.
      if (store === undefined) texts!.push(text);
      else store.append(text);
      ids.push(id);
      lines.push(lineNo);
      // trim() also flattens the title + text concatenation while it is young; flattening a million of them after
      // they reached the old generation cost 2.9 s at 1M documents against 0.29 s at 200k (measured).
      if (text.trim() === '') empty.push({ id, line: lineNo });
      // Hashed now, while the text is in hand (a stored one is not read back for the fingerprints; issue 25).
      fingerprints.add(id, text);
    } else if ((store === undefined ? texts![prev] : store.get(first + prev)) === text) {
      warnings.push(`${file}:${lineNo}: duplicate document ${id} collapsed (same as line ${lines[prev]})`);
    } else {
      throw new HarnessError(DOCUMENT_UNREADABLE, `two different documents share _id ${id} (lines ${lines[prev]} and ${lineNo})`, {
        location: { file, line: lineNo },
        remedy: 'give each document its own _id',
      });
    }
  });
  if (ids.length === 0) {
    throw new HarnessError('DATASET_EMPTY', `no documents in ${file}`, {
      location: { file },
      remedy: 'corpus.jsonl needs one {"_id", "title", "text"} object a line',
    });
  }
  // The documents in id order (code-unit order), made in that order; `byId` keeps the load-order indices.
  const order = new Array<number>(ids.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  order.sort((a, b) => (ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : 0));
  const sorted = new Array<Doc>(ids.length);
  for (let k = 0; k < order.length; k++) {
    const i = order[k];
    sorted[k] = store === undefined ? { id: ids[i], text: texts![i] } : new StoredDoc(ids[i], store, first + i);
  }
  return { docs: sorted, byId, empty };
}

async function parseQueries(file: string, warnings: string[], read: Read): Promise<Map<string, { text: string; line: number }>> {
  const out = new Map<string, { text: string; line: number }>();
  await eachLine(file, warnings, read, { bytes: MAX_QUERY_LINE_BYTES, code: 'QUESTIONS_INVALID', what: 'queries.jsonl' }, (line, lineNo) => {
    const o = parseObject(line, file, lineNo, 'QUESTIONS_INVALID');
    const id = idOf(o._id);
    if (id === undefined || typeof o.text !== 'string' || o.text.trim() === '') {
      throw new HarnessError('QUESTIONS_INVALID', `line ${lineNo}: a query needs a non-empty "_id" and a non-empty "text"`, {
        location: { file, line: lineNo, path: id === undefined ? '_id' : 'text' },
        remedy: 'write {"_id": "q1", "text": "..."}',
      });
    }
    const prev = out.get(id);
    if (prev === undefined) out.set(id, { text: o.text, line: lineNo });
    else if (prev.text === o.text) warnings.push(`${file}:${lineNo}: duplicate query ${id} collapsed (same as line ${prev.line})`);
    else {
      throw new HarnessError('QUESTIONS_INVALID', `duplicate query id ${id}: 2 entries with different text (lines ${prev.line} and ${lineNo})`, {
        location: { file, line: lineNo, path: '_id' },
        remedy: 'give each query its own _id',
      });
    }
  });
  return out;
}

interface Judged {
  firstLine: number;
  docs: Map<string, { grade: number; line: number }>;
}

const INTEGER = /^[+-]?[0-9]+$/;

async function parseQrels(file: string, warnings: string[], read: Read): Promise<Map<string, Judged>> {
  const out = new Map<string, Judged>();
  let first = true;
  await eachLine(file, warnings, read, { bytes: MAX_QUERY_LINE_BYTES, code: 'QRELS_INVALID', what: 'qrels' }, (line, lineNo) => {
    const f = line.split('\t');
    const isFirst = first;
    first = false;
    if (isFirst && f.length === 3 && !INTEGER.test(f[2].trim())) return; // header line
    if (f.length !== 3) {
      throw new HarnessError('QRELS_INVALID', `line ${lineNo}: expected 3 tab-separated fields (query-id, corpus-id, score), got ${f.length}: ${line.slice(0, 60)}`, {
        location: { file, line: lineNo },
        remedy: 'BEIR qrels rows are query-id<TAB>corpus-id<TAB>score (TREC qrels with 4 space-separated columns are a different format)',
      });
    }
    const qid = f[0].trim();
    const doc = f[1].trim();
    const s = f[2].trim();
    const grade = INTEGER.test(s) ? Number(s) + 0 : Number.NaN; // + 0 turns "-0" into 0
    if (qid === '' || doc === '' || !isValidGrade(grade)) {
      throw new HarnessError('QRELS_INVALID', `line ${lineNo}: ${qid === '' || doc === '' ? 'empty query-id or corpus-id' : `score ${JSON.stringify(s)} is not an integer from 0 to ${MAX_GRADE}`}`, {
        location: { file, line: lineNo },
        remedy: `each row needs a query id, a corpus id and an integer grade from 0 to ${MAX_GRADE} (src/score/grades.ts)`,
      });
    }
    let j = out.get(qid);
    if (j === undefined) {
      j = { firstLine: lineNo, docs: new Map() };
      out.set(qid, j);
    }
    const prev = j.docs.get(doc);
    if (prev === undefined) j.docs.set(doc, { grade, line: lineNo });
    else {
      if (grade > prev.grade) prev.grade = grade;
      warnings.push(`${file}:${lineNo}: ${qid} -> ${doc} judged twice (first on line ${prev.line}); counted once at grade ${prev.grade}`);
    }
  });
  return out;
}
