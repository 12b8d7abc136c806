/**
 * Grades are integers from 0 to 100 (TREC qrels also −100..−1, read as not relevant, as trec_eval), checked where
 * they are read, with file and line: before this rule `1e300` failed only when qrels were written (no line) and
 * `2000` made 2^2000 − 1 = Infinity, so every ndcg_exp value came out NaN.
 */
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadBeir } from '../../src/load/beir.js';
import { parseQuestions } from '../../src/load/questions.js';
import { formatQrels, parseQrels } from '../../src/load/trec.js';
import { MAX_GRADE, MIN_TREC_GRADE, isValidGrade } from '../../src/score/grades.js';
import { rejection, thrown } from '../helpers/errors.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const DOCS = new Map([['a.md', { id: 'a.md', text: 'alpha' }]]);

describe('grade range', () => {
  it('the range is 0..100, and -100..100 for TREC qrels', () => {
    expect([MIN_TREC_GRADE, MAX_GRADE]).toEqual([-100, 100]);
    expect(isValidGrade(100)).toBe(true);
    expect(isValidGrade(101)).toBe(false);
    expect(isValidGrade(-1)).toBe(false);
    expect(isValidGrade(-1, MIN_TREC_GRADE)).toBe(true);
    expect(isValidGrade(2.5)).toBe(false);
    // why 100 is safe: the exponential gain stays finite; at 1024 it does not
    expect(Number.isFinite(2 ** MAX_GRADE - 1)).toBe(true);
    expect(Number.isFinite(2 ** 1024 - 1)).toBe(false);
  });

  it('grade 1e300 is an error with file and line (TREC qrels)', () => {
    const e = thrown(() => parseQrels('q1 0 a 1\nq1 0 b 1e300\n', 'x.qrels'));
    expect(e.code).toBe('QRELS_INVALID');
    expect(e.location).toEqual({ file: 'x.qrels', line: 2 });
  });

  it('grade 2000 is an error (TREC qrels), with file and line', () => {
    const e = thrown(() => parseQrels('q1 0 a 1\n\nq1 0 b 2000\n', 'x.qrels'));
    expect(e.code).toBe('QRELS_INVALID');
    expect(e.location).toEqual({ file: 'x.qrels', line: 3 });
    expect(e.message).toContain('"2000" is not an integer from -100 to 100');
  });

  it('a negative TREC grade is read (as trec_eval) and written back', () => {
    const q = parseQrels('q1 0 a -1\nq1 0 b -0\n', 'x.qrels');
    expect([...q.get('q1')!]).toEqual([['a', -1], ['b', 0]]);
    expect(formatQrels(q)).toBe('q1 0 a -1\nq1 0 b 0\n');
    expect(thrown(() => parseQrels('q1 0 a -101\n', 'x.qrels')).code).toBe('QRELS_INVALID');
  });

  it('formatQrels refuses a grade outside the range instead of writing it', () => {
    const e = thrown(() => formatQrels(new Map([['q1', new Map([['a', 1e300]])]])));
    expect(e.code).toBe('QRELS_INVALID');
    expect(e.location.path).toBe('q1/a');
  });

  it('grade 1e300 is an error with file and line (questions.jsonl)', () => {
    const text = '{"id": "q0", "question": "x", "relevant": ["a.md"]}\n{"id": "q1", "question": "y", "relevant": {"a.md": 1e300}}\n';
    const e = thrown(() => parseQuestions(text, 'questions.jsonl', DOCS));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.location).toEqual({ file: 'questions.jsonl', line: 2, path: 'relevant.a.md' });
    expect(e.message).toBe('question q1: grade for a.md must be an integer from 0 to 100, got 1e+300');
  });

  it('grade 2000 is an error (questions.jsonl relevant, chunks and evidence)', () => {
    for (const line of [
      { id: 'q1', question: 'y', relevant: { 'a.md': 2000 } },
      { id: 'q1', question: 'y', chunks: { 'a.md#0': 2000 } },
      { id: 'q1', question: 'y', evidence: [{ doc: 'a.md', quote: 'alpha', grade: 2000 }] },
    ]) {
      const e = thrown(() => parseQuestions(`${JSON.stringify(line)}\n`, 'questions.jsonl', DOCS));
      expect(e.code).toBe('LABEL_INVALID');
      expect(e.location.line).toBe(1);
    }
    expect(parseQuestions('{"id": "q1", "question": "y", "relevant": {"a.md": 100}}\n', 'q', DOCS).questions[0].relevant).toEqual({ 'a.md': 100 });
  });

  it('grade 2000 is an error (BEIR qrels), with file and line', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-grades-'));
    cpSync(path.resolve(here, '../fixtures/load/beir-noheader'), dir, { recursive: true });
    const qrels = path.join(dir, 'qrels/test.tsv');
    writeFileSync(qrels, 'q1\td1\t1\nq2\td2\t2000\n');
    const e = await rejection(loadBeir(dir, 'test'));
    expect(e.code).toBe('QRELS_INVALID');
    expect(e.location).toEqual({ file: qrels, line: 2 });
    expect(e.message).toContain('is not an integer from 0 to 100');
  });
});
