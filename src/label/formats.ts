/**
 * The two file formats of the labelling loop, shared by `pool`, the labelling page (`label`), the LLM judge (`judge`)
 * and the sweep that reads labels back. One module so that every writer and reader agrees.
 *
 * ## Pool file (`pool.jsonl`)
 *
 * JSON lines. Line 1 is a {@link PoolHeader} (`"format": "retrieval-sweep.pool"`, `"version": 1`): the dataset it was
 * made from (with its corpus fingerprint, so a pool from another dataset is refused), the results folder, the level,
 * the depth, the rows pooled and the pair count. Every further line is one {@link PoolPair}, in queue order (the
 * order in which a person should judge them: `pair` = 1, 2, 3, ...).
 *
 * ## Judgments log (`<labels file>.judgments.jsonl`)
 *
 * Append-only JSON lines, one {@link Judgment} per line, written durably (fsync before the writer moves on) by the
 * page and the judge alike. A person's and a model's judgments live side by side and are told apart by `assessor`
 * (`"alice"`, `"llm:qwen2.5-7b-instruct"`). Nothing is ever rewritten: an undo is a new line. The current grade of a
 * pair for an assessor is the fold of that assessor's lines for the pair in file order ({@link foldJudgments}); the
 * grade the labels file gets is a person's over a model's ({@link resolveLabels}).
 *
 * A log whose last line has no line end was cut mid-write (a kill during the write): {@link openJudgmentLog} moves the
 * partial bytes to a side file named in a warning and truncates the log to its last complete line, so nothing complete
 * is lost and the next append starts on a clean line.
 */
import { writeFileAtomic } from '../store/temp.js';
import { closeSync, fstatSync, fsyncSync, openSync, readSync, ftruncateSync, writeFileSync, writeSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { appendAll } from '../bounded.js';

/** The `format` value of a pool header. */
export const POOL_FORMAT = 'retrieval-sweep.pool';
/** The pool format version this code writes and reads. */
export const POOL_VERSION = 1;
/** The judgments log format version (`v` of every line). */
export const JUDGMENT_VERSION = 1;
/** Longest line accepted in a pool file or judgments log (bytes), so a damaged file cannot exhaust memory. */
export const MAX_LINE_BYTES = 4 << 20;

/** Line 1 of a pool file. */
export interface PoolHeader {
  format: typeof POOL_FORMAT;
  version: typeof POOL_VERSION;
  dataset: {
    /** Dataset display name. */
    name: string;
    /** Absolute path of the dataset folder when the pool was made. */
    root: string;
    /**
     * sha256 hex over the sorted document ids and texts only (not the questions or their labels), so labelling does not
     * change it and a pool is refused on any other corpus.
     */
    corpus: string;
  };
  /** Absolute path of the results folder the pool was made from. */
  results: string;
  /** Level of the pooled items: `document` (whole documents) or `chunk` (chunks with their document and range). */
  level: 'document' | 'chunk';
  /** Ranks pooled from each row (1-based depth, ≥ 1). */
  depth: number;
  /** Configuration ids pooled. */
  rows: string[];
  /** Number of pair lines that follow. */
  pairs: number;
  /** Relevance threshold of the sweep (grade ≥ threshold is relevant). */
  threshold: number;
  /**
   * The sweep's `level` (`document`, `chunk` or `evidence`; added by `pool`, optional for older writers): decides how
   * a chunk's grade lands in questions.jsonl (src/label/merge.ts). Absent: `document` for a document pool, `evidence`
   * for a chunk pool.
   */
  sweepLevel?: 'document' | 'chunk' | 'evidence';
}

/** One pair of a pool: a question and a passage nobody has judged. */
export interface PoolPair {
  /** 1-based position in the queue. */
  pair: number;
  qid: string;
  /** Question text. */
  question: string;
  /** Document id. */
  doc: string;
  /** Chunk id at level `chunk` (`refunds.md#2`); absent at level `document`. */
  chunk?: string;
  /** Character range of the passage in the document, `[start, end)` in UTF-16 code units; the whole text at `document`. */
  start: number;
  end: number;
  /** The passage text shown to the assessor (the document's text at `document`, the chunk's at `chunk`). */
  passage: string;
  /** Configuration ids that retrieved it within the pool depth. */
  rows: string[];
  /** Best (smallest) 1-based rank at which any of those rows retrieved it. */
  bestRank: number;
  /** Length of the whole document in UTF-16 code units (added by `pool`; optional), to say where the passage sits. */
  docChars?: number;
}

/** What one line of the judgments log records. */
export type JudgmentAction = 'grade' | 'skip' | 'undo' | 'note' | 'failed';

/** One line of the judgments log. */
export interface Judgment {
  v: typeof JUDGMENT_VERSION;
  /** ISO 8601 time of the judgment. */
  time: string;
  /** Who judged: a person's name, or `llm:<model>` for a model. */
  assessor: string;
  action: JudgmentAction;
  qid: string;
  doc: string;
  /** Chunk id when the pair was pooled at level `chunk`. */
  chunk?: string;
  /** Passage range `[start, end)` in the document (UTF-16 code units). */
  start: number;
  end: number;
  /** The grade, an integer 0..100, for `grade`; absent otherwise. */
  grade?: number;
  /** The note's text for `note`. */
  note?: string;
  /** For `failed` (a model's answer that could not be parsed): the raw answer, truncated to 2,000 characters. */
  raw?: string;
  /** Corpus fingerprint of the pool the pair came from (see {@link PoolHeader}). */
  corpus?: string;
}

/** Whether an assessor name is a model's (`llm:<model>`). */
export function isModelAssessor(assessor: string): boolean {
  return assessor.startsWith('llm:');
}

/** The identity of a judged item: question, document and passage range. */
export function pairKey(p: { qid: string; doc: string; start: number; end: number }): string {
  return `${p.qid}\u0000${p.doc}\u0000${p.start}\u0000${p.end}`;
}

/** The labels file of a dataset folder: questions.jsonl (folder layout) or qrels/<split>.tsv (BEIR; split default `test`). */
export function datasetLabelsFile(root: string, layout: 'folder' | 'beir', split?: string): string {
  return layout === 'beir' ? path.join(root, 'qrels', `${split ?? 'test'}.tsv`) : path.join(root, 'questions.jsonl');
}

/** The judge's usage log of a labels file: `<labels>.judge-usage.jsonl`, one line per `judge` run (src/label/judge.ts). */
export function judgeUsagePath(labelsFile: string): string {
  return `${labelsFile}.judge-usage.jsonl`;
}

/** The judgments log of a labels file: `<labels>.judgments.jsonl` beside it. */
export function judgmentsLogPath(labelsFile: string): string {
  return `${labelsFile}.judgments.jsonl`;
}

function bad(file: string, line: number, what: string, remedy: string): HarnessError {
  return new HarnessError('LABEL_INVALID', what, { location: { file, line }, remedy });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function isIndex(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * Checks one parsed judgments-log line.
 * @throws HarnessError `LABEL_INVALID` naming the file, the line and the field.
 */
export function checkJudgment(o: unknown, file: string, line: number): Judgment {
  const remedy = `the judgments log is written by retrieval-sweep; restore ${path.basename(file)} from a copy or remove the line`;
  if (!isRecord(o)) throw bad(file, line, 'a judgment must be a JSON object', remedy);
  if (o.v !== JUDGMENT_VERSION) throw bad(file, line, `judgment version ${JSON.stringify(o.v)} is not ${JUDGMENT_VERSION}`, remedy);
  for (const k of ['time', 'assessor', 'qid', 'doc'] as const) {
    if (typeof o[k] !== 'string' || o[k] === '') throw bad(file, line, `"${k}" must be a non-empty string, got ${JSON.stringify(o[k])}`, remedy);
  }
  if (!['grade', 'skip', 'undo', 'note', 'failed'].includes(o.action as string)) {
    throw bad(file, line, `"action" must be grade, skip, undo, note or failed, got ${JSON.stringify(o.action)}`, remedy);
  }
  if (!isIndex(o.start) || !isIndex(o.end) || (o.end as number) < (o.start as number)) {
    throw bad(file, line, `"start" and "end" must be integers with 0 <= start <= end, got ${JSON.stringify([o.start, o.end])}`, remedy);
  }
  if (o.action === 'grade' && !(typeof o.grade === 'number' && Number.isSafeInteger(o.grade) && o.grade >= 0 && o.grade <= 100)) {
    throw bad(file, line, `"grade" must be an integer from 0 to 100, got ${JSON.stringify(o.grade)}`, remedy);
  }
  if (o.chunk !== undefined && typeof o.chunk !== 'string') throw bad(file, line, '"chunk" must be a string', remedy);
  if (o.note !== undefined && typeof o.note !== 'string') throw bad(file, line, '"note" must be a string', remedy);
  if (o.raw !== undefined && typeof o.raw !== 'string') throw bad(file, line, '"raw" must be a string', remedy);
  return o as unknown as Judgment;
}

/** What {@link readJudgments} found. */
export interface JudgmentsRead {
  judgments: Judgment[];
  /** Bytes after the last line end (a write cut by a kill); empty when the log ends cleanly. */
  partialTail: string;
  /** Byte offset where the partial tail starts (the size of the complete part). */
  completeBytes: number;
}

/**
 * Reads a judgments log. A missing file is an empty log. Lines are checked with {@link checkJudgment}; a last line
 * without a line end is returned as `partialTail`, not parsed.
 * @throws HarnessError `LABEL_INVALID` for a complete line that is not a valid judgment (file and line named) or a line
 *   over {@link MAX_LINE_BYTES}.
 */
export function readJudgments(file: string): JudgmentsRead {
  if (!existsSync(file)) return { judgments: [], partialTail: '', completeBytes: 0 };
  const buf = readFileSync(file);
  const lastNl = buf.lastIndexOf(10);
  const completeBytes = lastNl + 1;
  const text = buf.subarray(0, completeBytes).toString('utf8');
  const judgments: Judgment[] = [];
  let lineNo = 0;
  let pos = 0;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    const line = text.slice(pos, nl);
    pos = nl + 1;
    lineNo++;
    if (line.trim() === '') continue;
    if (Buffer.byteLength(line) > MAX_LINE_BYTES) {
      throw bad(file, lineNo, `line is longer than ${MAX_LINE_BYTES} bytes`, 'a judgment line is a few hundred bytes; the file is not a judgments log');
    }
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      throw bad(file, lineNo, 'line is not valid JSON', `the judgments log is written by retrieval-sweep; restore ${path.basename(file)} from a copy or remove the line`);
    }
    judgments.push(checkJudgment(o, file, lineNo));
  }
  return { judgments, partialTail: buf.subarray(completeBytes).toString('utf8'), completeBytes };
}

/** An open judgments log: appends are durable (written and fsynced) when {@link JudgmentLog.append} returns. */
export interface JudgmentLog {
  /** Path of the log. */
  readonly file: string;
  /** Judgments read when the log was opened, then every judgment appended since, in order. */
  readonly judgments: readonly Judgment[];
  /** Warnings from opening (a partial last line moved aside). */
  readonly warnings: readonly string[];
  /** Appends judgments as lines and fsyncs before returning. @throws HarnessError `LABEL_INVALID` for an invalid judgment. */
  append(...judgments: Judgment[]): void;
  /**
   * {@link JudgmentLog.append} for a list of any length (a rest parameter spreads its argument onto the stack, which
   * overflows past ~100,000 items): one write and one fsync for the whole list.
   */
  appendMany(judgments: readonly Judgment[]): void;
  /** Closes the file. */
  close(): void;
}

/**
 * Opens (or creates) a judgments log for appending. A partial last line (a write cut by a kill) is copied to
 * `<log>.partial-<ms since epoch>` and cut from the log, with a warning naming the side file.
 * @throws HarnessError `LABEL_INVALID` when a complete line is invalid (see {@link readJudgments}); `OUTPUT_INVALID`
 *   when the file cannot be opened for writing (the system's code and the path named).
 */
export function openJudgmentLog(file: string): JudgmentLog {
  const read = readJudgments(file);
  const warnings: string[] = [];
  let fd: number;
  try {
    fd = openSync(file, 'a+');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new HarnessError('OUTPUT_INVALID', `cannot open the judgments log ${file} for writing (${code})`, {
      location: { file },
      remedy: 'choose a --labels file in a folder you can write to',
      cause: e,
    });
  }
  if (read.partialTail.length > 0) {
    const side = `${file}.partial-${Date.now()}`;
    writeFileSync(side, read.partialTail);
    ftruncateSync(fd, read.completeBytes);
    fsyncSync(fd);
    warnings.push(
      `${file}: the last line was cut mid-write (${Buffer.byteLength(read.partialTail)} bytes, kept in ${side}); ` +
        'it was not a complete judgment and was removed from the log',
    );
  }
  const judgments = [...read.judgments];
  let open = true;
  const appendMany = (js: readonly Judgment[]): void => {
    if (!open) throw new Error(`judgments log ${file} is closed`);
    if (js.length === 0) return;
    const lines = js.map((j, i) => JSON.stringify(checkJudgment(j, file, judgments.length + i + 1))).join('\n') + '\n';
    const bytes = Buffer.from(lines, 'utf8');
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
    appendAll(judgments, js);
  };
  return {
    file,
    judgments,
    warnings,
    append: (...js: Judgment[]): void => appendMany(js),
    appendMany,
    close(): void {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

/** An assessor's current state of one pair after folding their log lines. */
export interface PairState {
  /** Current grade; undefined when none (never graded, or every grade undone). */
  grade?: number;
  /** Grades given in order, after undos (the last is `grade`). */
  history: number[];
  /** Notes in order. */
  notes: string[];
  /** Times skipped. */
  skips: number;
  /** For a model: the raw text of the last failed answer, when the last action was `failed`. */
  failed?: string;
}

/**
 * Folds judgments into the current state per pair and assessor: `grade` pushes a grade, `undo` removes that
 * assessor's last grade of the pair, `note` and `skip` are recorded, `failed` records a model's unparsable answer
 * (cleared by a later grade). Lines are applied in the order given (file order).
 * @returns pair key ({@link pairKey}) → assessor → state.
 */
export function foldJudgments(judgments: readonly Judgment[]): Map<string, Map<string, PairState>> {
  const out = new Map<string, Map<string, PairState>>();
  for (const j of judgments) {
    const key = pairKey(j);
    let byAssessor = out.get(key);
    if (byAssessor === undefined) out.set(key, (byAssessor = new Map()));
    let s = byAssessor.get(j.assessor);
    if (s === undefined) byAssessor.set(j.assessor, (s = { history: [], notes: [], skips: 0 }));
    switch (j.action) {
      case 'grade':
        s.history.push(j.grade as number);
        s.failed = undefined;
        break;
      case 'undo':
        s.history.pop();
        break;
      case 'note':
        s.notes.push(j.note ?? '');
        break;
      case 'skip':
        s.skips++;
        break;
      case 'failed':
        s.failed = j.raw ?? '';
        break;
    }
    s.grade = s.history.length > 0 ? s.history[s.history.length - 1] : undefined;
  }
  return out;
}

/** The label a pair gets, from {@link resolveLabels}. */
export interface ResolvedLabel {
  qid: string;
  doc: string;
  chunk?: string;
  start: number;
  end: number;
  grade: number;
  /** `human` when any person graded the pair (a person's grade always wins), else `llm`. */
  source: 'human' | 'llm';
  /** The assessor whose grade was taken. */
  assessor: string;
  /** Other assessors of the same source who gave a different grade (listed, not used). */
  disagreements: { assessor: string; grade: number }[];
}

/**
 * The grade each judged pair gets: a person's grade over a model's; among persons, the grade of the assessor who
 * judged the pair last (file order); among models likewise. Pairs whose every grade was undone get none.
 * @returns labels in the order pairs were first judged.
 */
export function resolveLabels(judgments: readonly Judgment[]): ResolvedLabel[] {
  const folded = foldJudgments(judgments);
  const lastTime = new Map<string, number>();
  const first = new Map<string, Judgment>();
  judgments.forEach((j, i) => {
    const key = pairKey(j);
    if (!first.has(key)) first.set(key, j);
    if (j.action === 'grade' || j.action === 'undo') lastTime.set(`${key}\u0000${j.assessor}`, i);
  });
  const out: ResolvedLabel[] = [];
  for (const [key, byAssessor] of folded) {
    const graded = [...byAssessor].filter(([, s]) => s.grade !== undefined);
    if (graded.length === 0) continue;
    const humans = graded.filter(([a]) => !isModelAssessor(a));
    const pool = humans.length > 0 ? humans : graded;
    pool.sort((a, b) => (lastTime.get(`${key}\u0000${a[0]}`) ?? 0) - (lastTime.get(`${key}\u0000${b[0]}`) ?? 0));
    const [assessor, state] = pool[pool.length - 1];
    const f = first.get(key) as Judgment;
    out.push({
      qid: f.qid,
      doc: f.doc,
      ...(f.chunk !== undefined ? { chunk: f.chunk } : {}),
      start: f.start,
      end: f.end,
      grade: state.grade as number,
      source: humans.length > 0 ? 'human' : 'llm',
      assessor,
      disagreements: pool
        .slice(0, -1)
        .filter(([, s]) => s.grade !== state.grade)
        .map(([a, s]) => ({ assessor: a, grade: s.grade as number })),
    });
  }
  return out;
}

/**
 * A pool file replaces only a pool file: an existing path that is not a regular file starting with a pool header (a
 * results folder's per-query.jsonl, a dataset's questions.jsonl, a device) is refused, so `--out` cannot destroy
 * the inputs of the next step.
 * @throws HarnessError `OUTPUT_INVALID` naming the path.
 */
function refuseToReplace(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return; // nothing there (or unreadable: the write reports it)
  }
  try {
    const st = fstatSync(fd);
    let ok = false;
    if (st.isFile()) {
      const buf = Buffer.alloc(Math.min(st.size, 64 << 10));
      const n = readSync(fd, buf, 0, buf.length, 0);
      ok = n === 0 || buf.subarray(0, n).toString("utf8").split("\n", 1)[0].includes(`"format":"${POOL_FORMAT}"`);
    }
    if (!ok) {
      throw new HarnessError('OUTPUT_INVALID', `refusing to replace ${file}: it is ${st.isFile() ? 'not a pool file' : 'not a regular file'}`, {
        location: { file },
        remedy: 'choose another --out path (e.g. pool.jsonl beside the results folder); a pool file replaces only an earlier pool file',
      });
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a pool file atomically (a temporary sibling, then one rename): the header, then one line per pair.
 * @throws HarnessError `OUTPUT_INVALID` when the file cannot be written (path and system code named); nothing is left.
 */
export function writePool(file: string, header: PoolHeader, pairs: readonly PoolPair[]): void {
  if (header.pairs !== pairs.length) throw new Error(`pool header says ${header.pairs} pairs, ${pairs.length} given`);
  refuseToReplace(file);
  const text = [header, ...pairs].map((o) => JSON.stringify(o)).join('\n') + '\n';
  writeFileAtomic(file, text, 'choose an --out path in a folder you can write to, with free space');
}

/**
 * Reads and checks a pool file: the header's format and version, every pair's fields, `pair` numbers 1..n in order,
 * and the pair count.
 * @throws HarnessError `LABEL_INVALID` naming the file and line (a missing file: `DATASET_NOT_FOUND`).
 */
export function readPool(file: string): { header: PoolHeader; pairs: PoolPair[] } {
  let text: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      const buf = Buffer.alloc(size);
      let off = 0;
      while (off < size) {
        const n = readSync(fd, buf, off, size - off, off);
        if (n === 0) break;
        off += n;
      }
      text = buf.subarray(0, off).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    throw new HarnessError('DATASET_NOT_FOUND', `cannot read the pool file ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
      location: { file },
      remedy: 'make a pool with `retrieval-sweep pool RESULTS --out pool.jsonl`',
      cause: e,
    });
  }
  const remedy = 'make the pool again with `retrieval-sweep pool RESULTS --out pool.jsonl`';
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  if (lines.length === 0) throw bad(file, 1, 'the pool file is empty', remedy);
  let head: unknown;
  try {
    head = JSON.parse(lines[0]);
  } catch {
    throw bad(file, 1, 'line 1 is not valid JSON', remedy);
  }
  if (!isRecord(head) || head.format !== POOL_FORMAT) {
    throw bad(file, 1, `line 1 is not a pool header ("format": "${POOL_FORMAT}")`, remedy);
  }
  if (head.version !== POOL_VERSION) {
    throw bad(file, 1, `pool format version ${JSON.stringify(head.version)} is not ${POOL_VERSION}`, remedy);
  }
  const ds = head.dataset;
  if (!isRecord(ds) || typeof ds.corpus !== 'string' || typeof ds.root !== 'string' || typeof ds.name !== 'string') {
    throw bad(file, 1, 'the header lacks dataset.name, dataset.root or dataset.corpus', remedy);
  }
  if (head.level !== 'document' && head.level !== 'chunk') throw bad(file, 1, `"level" must be document or chunk, got ${JSON.stringify(head.level)}`, remedy);
  if (!(typeof head.depth === 'number' && Number.isSafeInteger(head.depth) && head.depth >= 1)) throw bad(file, 1, `"depth" must be an integer >= 1`, remedy);
  if (!(typeof head.threshold === 'number' && Number.isSafeInteger(head.threshold) && head.threshold >= 1)) throw bad(file, 1, `"threshold" must be an integer >= 1`, remedy);
  if (!Array.isArray(head.rows) || !head.rows.every((r) => typeof r === 'string')) throw bad(file, 1, '"rows" must be a list of configuration ids', remedy);
  if (!isIndex(head.pairs) || typeof head.results !== 'string') throw bad(file, 1, 'the header lacks "pairs" or "results"', remedy);
  if (head.sweepLevel !== undefined && !['document', 'chunk', 'evidence'].includes(head.sweepLevel as string)) {
    throw bad(file, 1, `"sweepLevel" must be document, chunk or evidence, got ${JSON.stringify(head.sweepLevel)}`, remedy);
  }
  const header = head as unknown as PoolHeader;
  const pairs: PoolPair[] = [];
  for (let i = 1; i < lines.length; i++) {
    const lineNo = i + 1;
    let o: unknown;
    try {
      o = JSON.parse(lines[i]);
    } catch {
      throw bad(file, lineNo, 'line is not valid JSON', remedy);
    }
    if (!isRecord(o)) throw bad(file, lineNo, 'a pair must be a JSON object', remedy);
    if (o.pair !== pairs.length + 1) throw bad(file, lineNo, `"pair" must be ${pairs.length + 1}, got ${JSON.stringify(o.pair)}`, remedy);
    for (const k of ['qid', 'question', 'doc', 'passage'] as const) {
      if (typeof o[k] !== 'string') throw bad(file, lineNo, `"${k}" must be a string`, remedy);
    }
    if (!isIndex(o.start) || !isIndex(o.end) || (o.end as number) < (o.start as number)) throw bad(file, lineNo, '"start"/"end" must be integers with start <= end', remedy);
    if (o.chunk !== undefined && typeof o.chunk !== 'string') throw bad(file, lineNo, '"chunk" must be a string', remedy);
    if (!Array.isArray(o.rows) || !o.rows.every((r) => typeof r === 'string')) throw bad(file, lineNo, '"rows" must be a list of configuration ids', remedy);
    if (!(typeof o.bestRank === 'number' && Number.isSafeInteger(o.bestRank) && o.bestRank >= 1)) throw bad(file, lineNo, '"bestRank" must be an integer >= 1', remedy);
    if (o.docChars !== undefined && !isIndex(o.docChars)) throw bad(file, lineNo, '"docChars" must be an integer >= 0', remedy);
    pairs.push(o as unknown as PoolPair);
  }
  if (pairs.length !== header.pairs) {
    throw bad(file, lines.length, `the header announces ${header.pairs} pairs but the file holds ${pairs.length} (cut short?)`, remedy);
  }
  return { header, pairs };
}
