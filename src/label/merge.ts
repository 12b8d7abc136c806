/**
 * Merging resolved labels (src/label/formats.ts `resolveLabels`) into a dataset's own labels file, never overwriting
 * a grade that is already there (issue 20 §3). Two formats:
 *
 * - `questions.jsonl` (folder layout): only the lines of questions that get a new label change, and on those lines
 *   only the value of one key (`relevant`, `evidence` or `chunks`) is rewritten in place; every other byte of the
 *   line (other keys, their order, spacing) and every other line are kept as they were.
 *   Where a label lands:
 *   - a document pair → `relevant[doc] = grade` (grade 0 included: judged not relevant). An array form
 *     (`["a.md"]`, grade 1 each) becomes the object form `{"a.md": 1, ...}` on a changed line.
 *   - a chunk pair of a sweep at level `chunk` → `chunks[chunkId] = grade` (what that level scores).
 *   - a chunk pair of a sweep at level `evidence` → for grade ≥ 1 an `evidence` range `{doc, start, end, grade}`
 *     (character offsets survive re-chunking; docs/evidence.md); a grade 0 has no place in `evidence` (its grades are
 *     ≥ 1: a passage that is not evidence is left out) and stays in the judgments log only, which `pool` reads so the
 *     pair is not pooled again.
 * - a BEIR qrels TSV (`query-id corpus-id score`, header line kept): one line appended per new document label.
 *   Chunk pairs cannot be written to a qrels file (an error).
 *
 * A label for a pair the file already grades differently is a conflict: it is not written, and is listed (returned,
 * and written to `<labels>.conflicts.jsonl` by {@link mergeLabelsFile}). The same grade again is "unchanged".
 */
import { writeFileAtomic } from '../store/temp.js';
import { existsSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { normaliseDocId } from '../load/question-schema.js';
import type { ResolvedLabel } from './formats.js';

/** A label that was not written because the file grades the pair differently, or names no such question. */
export interface MergeConflict {
  qid: string;
  doc: string;
  chunk?: string;
  start: number;
  end: number;
  /** The grade in the labels file (absent when the question is missing). */
  existing?: number;
  /** The grade the judgments log resolved to. */
  proposed: number;
  assessor: string;
  source: 'human' | 'llm';
  /** `grade`: a different grade is already there; `question`: the labels file has no such question. */
  reason: 'grade' | 'question';
}

/** What a merge did. */
export interface MergeCounts {
  /** Labels written. */
  added: number;
  /** Labels already in the file with the same grade. */
  unchanged: number;
  /** Grade-0 chunk labels of an evidence-level pool, kept in the judgments log only (see the module comment). */
  logOnly: number;
  conflicts: MergeConflict[];
}

/** How chunk labels land: the sweep level of the pool they came from. */
export type ChunkLanding = 'chunk' | 'evidence';

interface Member {
  valueStart: number;
  valueEnd: number;
}

/**
 * The top-level members of one JSON object's text: key → the value's `[start, end)` in `text`, and the index of the
 * closing brace. The text must be valid JSON (the caller parsed it first).
 */
function scanObject(text: string): { members: Map<string, Member>; close: number } {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const skipString = () => {
    i++; // opening quote
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
  };
  ws();
  i++; // {
  const members = new Map<string, Member>();
  for (;;) {
    ws();
    if (text[i] === '}') return { members, close: i };
    if (text[i] === ',') {
      i++;
      continue;
    }
    const ks = i;
    skipString();
    const key = JSON.parse(text.slice(ks, i)) as string;
    ws();
    i++; // :
    ws();
    const vs = i;
    if (text[i] === '"') skipString();
    else if (text[i] === '{' || text[i] === '[') {
      let depth = 0;
      do {
        if (text[i] === '"') {
          skipString();
          continue;
        }
        if (text[i] === '{' || text[i] === '[') depth++;
        else if (text[i] === '}' || text[i] === ']') depth--;
        i++;
      } while (depth > 0);
    } else {
      while (i < text.length && !/[,}\s]/.test(text[i])) i++;
    }
    if (!members.has(key)) members.set(key, { valueStart: vs, valueEnd: i });
  }
}

/** JSON text of `v`; `spaced`: `{"a": 1, "b": [1, 2]}` (the style of a line written with spaces), else compact. */
function jsonText(v: unknown, spaced: boolean): string {
  if (!spaced || v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((x) => jsonText(x, true)).join(', ')}]`;
  return `{${Object.entries(v as Record<string, unknown>)
    .map(([k, x]) => `${JSON.stringify(k)}: ${jsonText(x, true)}`)
    .join(', ')}}`;
}

/**
 * `line` with the top-level `key`'s value replaced by `value`, or the member appended before the closing brace when
 * absent; written in the line's own style (a space after `:` and `,` when the line has `": `).
 */
function setMember(line: string, key: string, value: unknown): string {
  const { members, close } = scanObject(line);
  const spaced = /":\s/.test(line);
  const json = jsonText(value, spaced);
  const m = members.get(key);
  if (m) return line.slice(0, m.valueStart) + json + line.slice(m.valueEnd);
  const sep = members.size > 0 ? (spaced ? ', ' : ',') : '';
  let end = close;
  while (end > 0 && /\s/.test(line[end - 1])) end--;
  return `${line.slice(0, end)}${sep}${JSON.stringify(key)}:${spaced ? ' ' : ''}${json}${line.slice(end)}`;
}

/** Splits text into lines with their line ends, so unchanged lines are written back byte for byte. */
function splitKeep(text: string): string[] {
  const out: string[] = [];
  let pos = 0;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    const end = nl === -1 ? text.length : nl + 1;
    out.push(text.slice(pos, end));
    pos = end;
  }
  return out;
}

const conflictOf = (l: ResolvedLabel, reason: MergeConflict['reason'], existing?: number): MergeConflict => ({
  qid: l.qid,
  doc: l.doc,
  ...(l.chunk !== undefined ? { chunk: l.chunk } : {}),
  start: l.start,
  end: l.end,
  ...(existing !== undefined ? { existing } : {}),
  proposed: l.grade,
  assessor: l.assessor,
  source: l.source,
  reason,
});

/**
 * Merges labels into the text of a questions.jsonl file (module comment: where each label lands). Pure.
 * @param chunkLanding how chunk labels (those with `chunk`) land: `chunk` → `chunks`, `evidence` → `evidence` ranges
 * @returns the new text and the counts; a question id the file lacks makes a `question` conflict.
 * @throws HarnessError `QUESTIONS_INVALID` naming the line when a non-blank line is not a JSON object.
 */
export function mergeQuestionsText(text: string, labels: readonly ResolvedLabel[], chunkLanding: ChunkLanding, file = 'questions.jsonl'): { text: string; counts: MergeCounts } {
  const lines = splitKeep(text);
  const lineOf = new Map<string, number>();
  const parsed: (Record<string, unknown> | null)[] = lines.map((raw, i) => {
    const body = raw.replace(/\r?\n$/, '');
    if (body.trim() === '') return null;
    let o: unknown;
    try {
      o = JSON.parse(body);
    } catch {
      throw new HarnessError('QUESTIONS_INVALID', 'line is not valid JSON', { location: { file, line: i + 1 }, remedy: 'fix the line, then merge again (the judgments log keeps every judgment)' });
    }
    if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new HarnessError('QUESTIONS_INVALID', 'line is not a JSON object', { location: { file, line: i + 1 }, remedy: 'fix the line, then merge again' });
    const rec = o as Record<string, unknown>;
    const id = typeof rec.id === 'number' ? String(rec.id) : typeof rec.id === 'string' ? rec.id : undefined;
    if (id !== undefined && !lineOf.has(id)) lineOf.set(id, i);
    return rec;
  });
  const counts: MergeCounts = { added: 0, unchanged: 0, logOnly: 0, conflicts: [] };
  const byLine = new Map<number, ResolvedLabel[]>();
  for (const l of labels) {
    const i = lineOf.get(l.qid);
    if (i === undefined) {
      counts.conflicts.push(conflictOf(l, 'question'));
      continue;
    }
    let list = byLine.get(i);
    if (!list) byLine.set(i, (list = []));
    list.push(l);
  }
  for (const [i, ls] of byLine) {
    const o = parsed[i]!;
    const eol = /\r?\n$/.exec(lines[i])?.[0] ?? '';
    let body = lines[i].slice(0, lines[i].length - eol.length);
    // Existing document grades: `relevant` (object or array form), then evidence documents at their highest grade.
    const rel = new Map<string, number>();
    const relIn = o.relevant;
    if (Array.isArray(relIn)) for (const d of relIn) rel.set(normaliseDocId(String(d)), 1);
    else if (relIn && typeof relIn === 'object') for (const [d, g] of Object.entries(relIn as Record<string, number>)) rel.set(normaliseDocId(d), g);
    const evidence = Array.isArray(o.evidence) ? [...(o.evidence as Record<string, unknown>[])] : [];
    const evDocGrade = new Map<string, number>();
    for (const e of evidence) {
      const d = normaliseDocId(String(e.doc));
      evDocGrade.set(d, Math.max(evDocGrade.get(d) ?? 0, typeof e.grade === 'number' ? e.grade : 1));
    }
    // Keyed by document and chunk ids: null-prototype copies, so an id such as __proto__ is an entry like any other.
    const chunks = Object.assign(
      Object.create(null) as Record<string, number>,
      o.chunks && typeof o.chunks === 'object' && !Array.isArray(o.chunks) ? (o.chunks as Record<string, number>) : {},
    );
    let relChanged = false;
    let evChanged = false;
    let chunksChanged = false;
    const relOut = Object.assign(
      Object.create(null) as Record<string, number>,
      Array.isArray(relIn) ? Object.fromEntries(relIn.map((d) => [String(d), 1])) : ((relIn as Record<string, number> | undefined) ?? {}),
    );
    for (const l of ls) {
      if (l.chunk === undefined) {
        const existing = rel.get(l.doc) ?? evDocGrade.get(l.doc);
        if (existing === undefined) {
          relOut[l.doc] = l.grade;
          rel.set(l.doc, l.grade);
          relChanged = true;
          counts.added++;
        } else if (existing === l.grade) counts.unchanged++;
        else counts.conflicts.push(conflictOf(l, 'grade', existing));
      } else if (chunkLanding === 'chunk') {
        const existing = chunks[l.chunk];
        if (existing === undefined) {
          chunks[l.chunk] = l.grade;
          chunksChanged = true;
          counts.added++;
        } else if (existing === l.grade) counts.unchanged++;
        else counts.conflicts.push(conflictOf(l, 'grade', existing));
      } else {
        const same = evidence.find((e) => normaliseDocId(String(e.doc)) === l.doc && e.start === l.start && e.end === l.end);
        const existing = same ? (typeof same.grade === 'number' ? same.grade : 1) : undefined;
        if (l.grade === 0) {
          if (existing === undefined) counts.logOnly++;
          else counts.conflicts.push(conflictOf(l, 'grade', existing));
        } else if (existing === undefined) {
          evidence.push({ doc: l.doc, start: l.start, end: l.end, grade: l.grade });
          evChanged = true;
          counts.added++;
        } else if (existing === l.grade) counts.unchanged++;
        else counts.conflicts.push(conflictOf(l, 'grade', existing));
      }
    }
    if (relChanged) body = setMember(body, 'relevant', relOut);
    if (evChanged) body = setMember(body, 'evidence', evidence);
    if (chunksChanged) body = setMember(body, 'chunks', chunks);
    lines[i] = body + eol;
  }
  return { text: lines.join(''), counts };
}

/** The header line a new BEIR qrels file gets. */
export const QRELS_HEADER = 'query-id\tcorpus-id\tscore';

/**
 * Merges document labels into the text of a BEIR qrels TSV (`query-id corpus-id score`, tab-separated, first line a
 * header): existing lines are kept byte for byte, new labels are appended in the order given. Pure.
 * @throws HarnessError `USAGE` for a chunk label (a qrels file holds document grades only).
 */
export function mergeQrelsText(text: string, labels: readonly ResolvedLabel[], file = 'qrels.tsv'): { text: string; counts: MergeCounts } {
  const existing = new Map<string, number>();
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const f = line.replace(/\r$/, '').split('\t');
    if (f.length < 3 || (i === 0 && !/^-?\d+$/.test(f[2].trim()))) return; // the header or a blank line
    existing.set(`${f[0]}\u0000${f[1]}`, Number(f[2]));
  });
  const counts: MergeCounts = { added: 0, unchanged: 0, logOnly: 0, conflicts: [] };
  const add: string[] = [];
  for (const l of labels) {
    if (l.chunk !== undefined) {
      throw new HarnessError('USAGE', `${file}: a qrels file holds document grades, but the judgments include chunk ${l.chunk} (a chunk-level pool)`, {
        location: { file },
        remedy: 'label a chunk-level pool into the dataset\'s questions.jsonl (evidence ranges), or pool a document-level sweep',
      });
    }
    const key = `${l.qid}\u0000${l.doc}`;
    const g = existing.get(key);
    if (g === undefined) {
      add.push(`${l.qid}\t${l.doc}\t${l.grade}`);
      existing.set(key, l.grade);
      counts.added++;
    } else if (g === l.grade) counts.unchanged++;
    else counts.conflicts.push(conflictOf(l, 'grade', g));
  }
  if (add.length === 0) return { text, counts };
  const base = text === '' ? `${QRELS_HEADER}\n` : text.endsWith('\n') ? text : `${text}\n`;
  return { text: `${base}${add.join('\n')}\n`, counts };
}

/** The conflicts file of a labels file: `<labels>.conflicts.jsonl`. */
export function conflictsPath(labelsFile: string): string {
  return `${labelsFile}.conflicts.jsonl`;
}

/** Whether a labels file is a BEIR qrels TSV (by extension `.tsv`) rather than questions.jsonl. */
export function isQrelsFile(labelsFile: string): boolean {
  return /\.tsv$/i.test(labelsFile);
}

function writeAtomic(file: string, text: string): void {
  writeFileAtomic(file, text, 'check the folder is writable and has free space; the judgments log keeps every judgment, so merge again');
}

/**
 * Checks a labels file before any judgment is taken, so a wrong `--labels` fails at once instead of at the merge
 * after the grading: it must be a regular file (a BEIR qrels `.tsv` may be missing: the merge creates it with its
 * header) whose text the merge can read (a dry-run merge of no labels, which parses every line).
 * @throws HarnessError `DATASET_NOT_FOUND` for a missing questions.jsonl or a path that is a folder or a device;
 *   `QUESTIONS_INVALID` / `QRELS_INVALID` naming the line the merge could not read.
 */
export function checkLabelsFile(labelsFile: string, chunkLanding: ChunkLanding = 'evidence'): void {
  const qrels = isQrelsFile(labelsFile);
  const remedy = "pass the dataset's questions.jsonl (or a BEIR qrels/<split>.tsv) as --labels";
  let st: ReturnType<typeof statSync> | undefined;
  try {
    st = statSync(labelsFile);
  } catch {
    st = undefined;
  }
  if (st === undefined) {
    if (qrels) return;
    throw new HarnessError('DATASET_NOT_FOUND', `labels file ${labelsFile} does not exist`, { location: { file: labelsFile }, remedy });
  }
  if (!st.isFile()) {
    throw new HarnessError('DATASET_NOT_FOUND', `labels file ${labelsFile} is ${st.isDirectory() ? 'a folder' : 'not a regular file'}`, {
      location: { file: labelsFile },
      remedy,
    });
  }
  const text = readFileSync(labelsFile, 'utf8');
  if (qrels) mergeQrelsText(text, [], labelsFile);
  else mergeQuestionsText(text, [], chunkLanding, labelsFile);
}

/** What {@link mergeLabelsFile} did. */
export interface MergeOutcome extends MergeCounts {
  file: string;
  /** `<labels>.conflicts.jsonl`, written when there are conflicts (and removed when there are none). */
  conflictsFile: string;
}

/**
 * Merges `labels` into the labels file atomically (a temporary sibling, fsync, one rename) and rewrites
 * `<labels>.conflicts.jsonl` with the current conflicts (removed when none). Format by extension: `.tsv` → BEIR
 * qrels ({@link mergeQrelsText}; created with its header when missing), otherwise questions.jsonl
 * ({@link mergeQuestionsText}; must exist). Nothing is written when nothing is added.
 * @throws HarnessError `DATASET_NOT_FOUND` for a missing questions.jsonl; what the text mergers throw; `OUTPUT_INVALID`
 *   when a file cannot be written.
 */
export function mergeLabelsFile(labelsFile: string, labels: readonly ResolvedLabel[], chunkLanding: ChunkLanding): MergeOutcome {
  const qrels = isQrelsFile(labelsFile);
  let text = '';
  if (existsSync(labelsFile)) text = readFileSync(labelsFile, 'utf8');
  else if (!qrels) {
    throw new HarnessError('DATASET_NOT_FOUND', `labels file ${labelsFile} does not exist`, {
      location: { file: labelsFile },
      remedy: "pass the dataset's questions.jsonl (or a BEIR qrels/<split>.tsv) as --labels",
    });
  }
  const merged = qrels ? mergeQrelsText(text, labels, labelsFile) : mergeQuestionsText(text, labels, chunkLanding, labelsFile);
  if (merged.counts.added > 0) writeAtomic(labelsFile, merged.text);
  const conflictsFile = conflictsPath(labelsFile);
  if (merged.counts.conflicts.length > 0) writeAtomic(conflictsFile, merged.counts.conflicts.map((c) => JSON.stringify(c)).join('\n') + '\n');
  else if (existsSync(conflictsFile)) unlinkSync(conflictsFile);
  return { ...merged.counts, file: labelsFile, conflictsFile };
}
