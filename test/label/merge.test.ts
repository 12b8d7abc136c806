/** Merging resolved labels into questions.jsonl and BEIR qrels (src/label/merge.ts): hand-written before and after. */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ResolvedLabel } from '../../src/label/formats.js';
import { checkLabelsFile, conflictsPath, mergeLabelsFile, mergeQrelsText, mergeQuestionsText } from '../../src/label/merge.js';
import { thrown } from '../helpers/errors.js';

const label = (qid: string, doc: string, grade: number, extra: Partial<ResolvedLabel> = {}): ResolvedLabel => ({
  qid, doc, start: 0, end: 100, grade, source: 'human', assessor: 'alice', disagreements: [], ...extra,
});

const QUESTIONS =
  '{"id": "q1", "question": "x", "relevant": {"a.md": 2}, "tags": ["t"]}\n' +
  '{"id":"q2","question":"y","relevant":["b.md"]}\n' +
  '\n' +
  '{"id": 3, "question": "z"}\n';

describe('mergeQuestionsText', () => {
  it('adds new document grades in place, keeps other keys, lines and spacing, and lists conflicts', () => {
    const { text, counts } = mergeQuestionsText(
      QUESTIONS,
      [label('q1', 'a.md', 2), label('q1', 'c.md', 0), label('q2', 'b.md', 3), label('q2', 'd.md', 1), label('3', 'e.md', 2), label('q9', 'x.md', 1)],
      'evidence',
    );
    expect(text).toBe(
      '{"id": "q1", "question": "x", "relevant": {"a.md": 2, "c.md": 0}, "tags": ["t"]}\n' +
        '{"id":"q2","question":"y","relevant":{"b.md":1,"d.md":1}}\n' +
        '\n' +
        '{"id": 3, "question": "z", "relevant": {"e.md": 2}}\n',
    );
    expect(counts.added).toBe(3);
    expect(counts.unchanged).toBe(1);
    expect(counts.conflicts.map((c) => [c.qid, c.doc, c.reason, c.existing, c.proposed])).toEqual([
      ['q9', 'x.md', 'question', undefined, 1],
      ['q2', 'b.md', 'grade', 1, 3],
    ]);
  });

  it('an evidence-level chunk grade >= 1 becomes an evidence range; a grade 0 stays in the log only', () => {
    const c = (grade: number, start: number) => label('q1', 'a.md', grade, { chunk: `a.md#${start}`, start, end: start + 10 });
    const { text, counts } = mergeQuestionsText('{"id":"q1","question":"x","evidence":[{"doc":"a.md","start":0,"end":10,"grade":2}]}\n', [c(2, 0), c(3, 20), c(0, 40), c(1, 0)], 'evidence');
    expect(text).toBe('{"id":"q1","question":"x","evidence":[{"doc":"a.md","start":0,"end":10,"grade":2},{"doc":"a.md","start":20,"end":30,"grade":3}]}\n');
    expect([counts.added, counts.unchanged, counts.logOnly, counts.conflicts.length]).toEqual([1, 1, 1, 1]);
    expect(counts.conflicts[0].existing).toBe(2);
  });

  it('a chunk-level sweep\'s chunk grades land in "chunks", 0 included', () => {
    const { text } = mergeQuestionsText('{"id":"q1","question":"x","chunks":{"a.md#0":1}}\n', [label('q1', 'a.md', 0, { chunk: 'a.md#1', start: 5, end: 9 })], 'chunk');
    expect(text).toBe('{"id":"q1","question":"x","chunks":{"a.md#0":1,"a.md#1":0}}\n');
  });

  it('a line that is not JSON is an error naming the line', () => {
    expect(thrown(() => mergeQuestionsText('{"id":"q1","question":"x"}\n{oops\n', [], 'evidence')).location.line).toBe(2);
  });
});

describe('mergeQrelsText', () => {
  const QRELS = 'query-id\tcorpus-id\tscore\nq1\ta\t1\nq1\tb\t2';
  it('appends new lines after the kept ones; a different grade is a conflict', () => {
    const { text, counts } = mergeQrelsText(QRELS, [label('q1', 'a', 1), label('q1', 'c', 0), label('q1', 'b', 1), label('q2', 'a', 3)]);
    expect(text).toBe('query-id\tcorpus-id\tscore\nq1\ta\t1\nq1\tb\t2\nq1\tc\t0\nq2\ta\t3\n');
    expect([counts.added, counts.unchanged]).toEqual([2, 1]);
    expect(counts.conflicts.map((c) => [c.doc, c.existing, c.proposed])).toEqual([['b', 2, 1]]);
  });
  it('refuses chunk labels', () => {
    expect(thrown(() => mergeQrelsText(QRELS, [label('q1', 'a', 1, { chunk: 'a#0' })])).code).toBe('USAGE');
  });
});

describe('mergeLabelsFile', () => {
  it('writes the labels file and the conflicts file; a clean merge removes the conflicts file', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-merge-'));
    const f = path.join(dir, 'test.tsv');
    writeFileSync(f, 'query-id\tcorpus-id\tscore\nq1\ta\t1\n');
    const m = mergeLabelsFile(f, [label('q1', 'a', 2), label('q1', 'b', 1)], 'evidence');
    expect(m.added).toBe(1);
    expect(readFileSync(f, 'utf8')).toBe('query-id\tcorpus-id\tscore\nq1\ta\t1\nq1\tb\t1\n');
    const listed = readFileSync(conflictsPath(f), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { doc: string; existing: number; proposed: number });
    expect(listed.map((c) => [c.doc, c.existing, c.proposed])).toEqual([['a', 1, 2]]);
    mergeLabelsFile(f, [label('q1', 'a', 1)], 'evidence');
    expect(existsSync(conflictsPath(f))).toBe(false);
    const fresh = path.join(dir, 'new.tsv');
    mergeLabelsFile(fresh, [label('q1', 'z', 3)], 'evidence');
    expect(readFileSync(fresh, 'utf8')).toBe('query-id\tcorpus-id\tscore\nq1\tz\t3\n');
  });
});

describe('checkLabelsFile: a wrong --labels fails before any judgment', () => {
  const d = mkdtempSync(path.join(tmpdir(), 'rs-check-labels-'));
  it('a folder, a missing questions.jsonl and a line that is not JSON are errors naming the file; a missing qrels .tsv is fine', () => {
    expect(thrown(() => checkLabelsFile(d)).message).toContain('is a folder');
    expect(thrown(() => checkLabelsFile(path.join(d, 'missing.jsonl'))).code).toBe('DATASET_NOT_FOUND');
    const bad = path.join(d, 'labels.csv');
    writeFileSync(bad, 'q1,doc,1\n');
    const e = thrown(() => checkLabelsFile(bad));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.location.line).toBe(1);
    expect(() => checkLabelsFile(path.join(d, 'qrels', 'test.tsv'))).not.toThrow();
  });
});
