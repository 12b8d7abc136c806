/**
 * TREC qrels and run files, read and written as trec_eval 10.0 does.
 *
 * qrels: one judgement a line, `qid iter docno grade`, whitespace separated (spaces or tabs); `iter` is ignored
 * (usually `0`); `grade` is an integer from −100 to 100 (src/score/grades.ts): 0 = judged not relevant; trec_eval
 * reads negative grades as "in the pool but not judged relevant", and they never count as relevant here either.
 * run: one retrieved document a line, `qid Q0 docno rank score tag`; `Q0` and `rank` are ignored (trec_eval orders
 * by score descending, then docno descending: see src/retrieve/rank.ts), `score` is a finite decimal number.
 * Blank lines are skipped. Lines are numbered from 1.
 */
import { readFileSync } from 'node:fs';
import { HarnessError } from '../errors.js';
import { isValidGrade, MAX_GRADE, MIN_TREC_GRADE } from '../score/grades.js';
import type { Qrels, Run } from '../score/evaluate.js';

export type { Qrels, Run } from '../score/evaluate.js';

const INTEGER = /^[+-]?[0-9]+$/;
/** A decimal number as C's strtod reads it, without hex, inf or nan. */
const DECIMAL = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

function lines(text: string): string[] {
  const all = text.split('\n');
  if (all.length > 0 && all[all.length - 1] === '') all.pop();
  return all.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
}

function fields(line: string): string[] {
  const t = line.trim();
  return t === '' ? [] : t.split(/[ \t]+/);
}

function show(line: string): string {
  return JSON.stringify(line.length > 120 ? `${line.slice(0, 117)}...` : line);
}

/**
 * Parses qrels text: `qid iter docno grade` per line.
 * @param file path or name used in error messages
 * @returns qid → docno → grade, questions and documents in file order
 * @throws HarnessError `QRELS_INVALID` with `location: { file, line }` for a line without exactly 4 fields, a grade
 *   that is not an integer from −100 to 100 (`1e300` and `2000` are refused here, with the line, rather than
 *   failing later), or a (qid, docno) pair judged twice (trec_eval refuses those too).
 */
export function parseQrels(text: string, file: string): Qrels {
  const qrels: Qrels = new Map();
  const firstLine = new Map<string, number>();
  lines(text).forEach((line, i) => {
    const lineNo = i + 1;
    const f = fields(line);
    if (f.length === 0) return;
    if (f.length !== 4) {
      throw new HarnessError('QRELS_INVALID', `qrels line has ${f.length} fields, expected 4: ${show(line)}`, {
        location: { file, line: lineNo },
        remedy: 'write one judgement a line as "qid 0 docno grade" (whitespace separated; no header line)',
      });
    }
    const [qid, , docno, gradeText] = f;
    if (!INTEGER.test(gradeText) || !isValidGrade(Number(gradeText) + 0, MIN_TREC_GRADE)) {
      throw new HarnessError(
        'QRELS_INVALID',
        `qrels grade ${JSON.stringify(gradeText)} is not an integer from ${MIN_TREC_GRADE} to ${MAX_GRADE}: ${show(line)}`,
        {
          location: { file, line: lineNo },
          remedy:
            `the fourth field is the grade: an integer, 0 for judged not relevant, 1 to ${MAX_GRADE} for relevant ` +
            '(negative grades are read as not relevant, as trec_eval does)',
        },
      );
    }
    const key = `${qid}\u0000${docno}`;
    const earlier = firstLine.get(key);
    if (earlier !== undefined) {
      throw new HarnessError(
        'QRELS_INVALID',
        `question ${qid} judges document ${docno} twice (lines ${earlier} and ${lineNo})`,
        { location: { file, line: lineNo }, remedy: 'keep one judgement per (question, document) pair' },
      );
    }
    firstLine.set(key, lineNo);
    let docs = qrels.get(qid);
    if (docs === undefined) {
      docs = new Map();
      qrels.set(qid, docs);
    }
    docs.set(docno, Number(gradeText) + 0); // + 0 turns "-0" into 0
  });
  return qrels;
}

/**
 * Parses TREC run text: `qid Q0 docno rank score tag` per line.
 * @param file path or name used in error messages
 * @returns qid → entries in file order (duplicates kept; `evaluate` orders them and warns about repeats)
 * @throws HarnessError `RUN_INVALID` with `location: { file, line }` for a line without exactly 6 fields or a score
 *   that is not a finite decimal number.
 */
export function parseRun(text: string, file: string): Run {
  const run: Run = new Map();
  lines(text).forEach((line, i) => {
    const lineNo = i + 1;
    const f = fields(line);
    if (f.length === 0) return;
    if (f.length !== 6) {
      throw new HarnessError('RUN_INVALID', `run line has ${f.length} fields, expected 6: ${show(line)}`, {
        location: { file, line: lineNo },
        remedy: 'write one retrieved document a line as "qid Q0 docno rank score tag" (whitespace separated)',
      });
    }
    const [qid, , docno, , scoreText] = f;
    const score = Number(scoreText);
    if (!DECIMAL.test(scoreText) || !Number.isFinite(score)) {
      throw new HarnessError('RUN_INVALID', `run score ${JSON.stringify(scoreText)} is not a finite number: ${show(line)}`, {
        location: { file, line: lineNo },
        remedy: 'the fifth field is the score, a decimal number such as 12.5 or 1e-3; higher ranks first',
      });
    }
    let entries = run.get(qid);
    if (entries === undefined) {
      entries = [];
      run.set(qid, entries);
    }
    entries.push({ docno, score });
  });
  return run;
}

function readText(path: string, code: 'QRELS_INVALID' | 'RUN_INVALID'): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    const what = code === 'QRELS_INVALID' ? 'qrels' : 'run';
    throw new HarnessError(code, `cannot read ${what} file: ${(e as Error).message}`, {
      location: { file: path },
      remedy: `check the ${what} file path`,
      cause: e,
    });
  }
}

/**
 * Reads and parses a qrels file (UTF-8).
 * @throws HarnessError `QRELS_INVALID` when the file cannot be read or a line is bad (see {@link parseQrels}).
 */
export function readQrels(path: string): Qrels {
  return parseQrels(readText(path, 'QRELS_INVALID'), path);
}

/**
 * Reads and parses a run file (UTF-8).
 * @throws HarnessError `RUN_INVALID` when the file cannot be read or a line is bad (see {@link parseRun}).
 */
export function readRun(path: string): Run {
  return parseRun(readText(path, 'RUN_INVALID'), path);
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function checkToken(value: string, what: string, code: 'QRELS_INVALID' | 'RUN_INVALID'): void {
  if (value === '' || /\s/.test(value)) {
    throw new HarnessError(code, `${what} ${JSON.stringify(value)} is empty or contains whitespace`, {
      remedy: `TREC files separate fields by whitespace; give the ${what} a name without spaces`,
    });
  }
}

/**
 * Writes qrels as `qid 0 docno grade` lines, ordered by qid then docno (code-unit order), ending with a newline
 * (empty string for empty qrels). Round-trips through {@link parseQrels}.
 * @throws HarnessError `QRELS_INVALID` when a qid or docno is empty or holds whitespace, or a grade is not an integer
 *   from −100 to 100.
 */
export function formatQrels(qrels: Qrels): string {
  const out: string[] = [];
  for (const qid of [...qrels.keys()].sort(byCodeUnits)) {
    checkToken(qid, 'qid', 'QRELS_INVALID');
    const docs = qrels.get(qid)!;
    for (const docno of [...docs.keys()].sort(byCodeUnits)) {
      checkToken(docno, 'docno', 'QRELS_INVALID');
      const grade = docs.get(docno)!;
      if (!isValidGrade(grade, MIN_TREC_GRADE)) {
        throw new HarnessError('QRELS_INVALID', `grade ${String(grade)} of ${qid}/${docno} is not an integer from ${MIN_TREC_GRADE} to ${MAX_GRADE}`, {
          location: { path: `${qid}/${docno}` },
          remedy: `grades are integers (0 = not relevant, at most ${MAX_GRADE})`,
        });
      }
      out.push(`${qid} 0 ${docno} ${grade}`);
    }
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

/**
 * Writes run rows as `qid Q0 docno rank score tag` lines, in the order given, ending with a newline (empty string
 * for no rows). Scores are printed with `String(score)`, the shortest text that reads back to the same double, so
 * trec_eval (which re-sorts by score, then docno) orders the lines exactly as we did.
 * @throws HarnessError `RUN_INVALID` when a qid, docno or tag is empty or holds whitespace, a score is not finite, or
 *   a rank is not an integer ≥ 1.
 */
export function formatRun(rows: { qid: string; docno: string; rank: number; score: number }[], tag: string): string {
  checkToken(tag, 'run tag', 'RUN_INVALID');
  const out: string[] = [];
  for (const r of rows) {
    checkToken(r.qid, 'qid', 'RUN_INVALID');
    checkToken(r.docno, 'docno', 'RUN_INVALID');
    if (!Number.isFinite(r.score)) {
      throw new HarnessError('RUN_INVALID', `score ${String(r.score)} of ${r.qid}/${r.docno} is not finite`, {
        remedy: 'scores must be finite numbers',
      });
    }
    if (!Number.isSafeInteger(r.rank) || r.rank < 1) {
      throw new HarnessError('RUN_INVALID', `rank ${String(r.rank)} of ${r.qid}/${r.docno} is not an integer >= 1`, {
        remedy: 'ranks are 1-based integers',
      });
    }
    out.push(`${r.qid} Q0 ${r.docno} ${r.rank} ${String(r.score)} ${tag}`);
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}
