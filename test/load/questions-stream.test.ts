/**
 * Issue 24 §2: questions.jsonl is streamed like the BEIR files (never one string), with a bounded line length whose
 * error names the limit, the file and the line, and the UTF-8 warning naming the lines.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBeir } from '../../src/load/beir.js';
import { loadDataset } from '../../src/load/dataset.js';
import { forEachLine, LineTooLongError } from '../../src/load/lines.js';
import { loadQuestionsFile, MAX_QUESTION_LINE_BYTES, parseQuestions } from '../../src/load/questions.js';
import type { Doc } from '../../src/types.js';
import { rejection } from '../helpers/errors.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'rs-qstream-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const DOCS = new Map<string, Doc>([
  ['a.md', { id: 'a.md', text: 'Refunds reach your card within five working days.' }],
  ['b.md', { id: 'b.md', text: 'The pump runs at 3 bar.' }],
]);

describe('forEachLine maxLineBytes', () => {
  const file = path.join(tmp, 'ten.txt');
  // line 1: 10 bytes, line 2: 11 bytes, line 3: 3 bytes
  writeFileSync(file, '0123456789\n0123456789X\nabc\n');

  it.each([1, 3, 4, 64])('a line of exactly the limit passes, one byte more stops at that line (highWaterMark %i)', async (hwm) => {
    const seen: number[] = [];
    await forEachLine(file, (_l, n) => void seen.push(n), { highWaterMark: hwm, maxLineBytes: 11 });
    expect(seen).toEqual([1, 2, 3]);
    const seen10: number[] = [];
    const e = await forEachLine(file, (_l, n) => void seen10.push(n), { highWaterMark: hwm, maxLineBytes: 10 }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LineTooLongError);
    expect((e as LineTooLongError).lineNo).toBe(2);
    expect((e as LineTooLongError).limit).toBe(10);
    expect(seen10).toEqual([1]);
  });

  it('a final line without a line break is bounded too', async () => {
    const f = path.join(tmp, 'tail.txt');
    writeFileSync(f, 'ab\nabcdef');
    const e = await forEachLine(f, () => undefined, { highWaterMark: 2, maxLineBytes: 5 }).catch((x: unknown) => x);
    expect((e as LineTooLongError).lineNo).toBe(2);
  });
});

describe('loadQuestionsFile', () => {
  const lines = [
    '\uFEFF{"id": "q1", "question": "refund time?", "relevant": {"a.md": 2}}\r',
    '',
    '{"id": "q2", "question": "pump pressure", "relevant": ["b.md"], "evidence": [{"doc": "b.md", "quote": "3 bar"}]}',
    '{"id": "q1", "question": "refund time?", "relevant": {"a.md": 2}}',
    '{"id": "q3", "question": "nothing", "relevant": {"gone.md": 1}}',
  ];
  const text = `${lines.join('\n')}\n`;
  const file = path.join(tmp, 'questions.jsonl');
  writeFileSync(file, text);

  it.each([1, 7, 1 << 20])('gives what parseQuestions gives on the whole text, line numbers included (highWaterMark %i)', async (hwm) => {
    const whole = parseQuestions(text, file, DOCS, { labels: 'keep' });
    const streamed = await loadQuestionsFile(file, DOCS, { labels: 'keep', highWaterMark: hwm });
    expect(streamed).toEqual(whole);
    expect(streamed.questions.map((q) => [q.id, q.line])).toEqual([
      ['q1', 1],
      ['q2', 3],
      ['q3', 5],
    ]);
  });

  it('a line over the limit is QUESTIONS_INVALID naming the file, the line and the limit', async () => {
    const e = await rejection(loadQuestionsFile(file, DOCS, { labels: 'keep', maxLineBytes: 100, highWaterMark: 16 }));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.location).toEqual({ file, line: 3 });
    expect(e.message).toContain('100 bytes');
  });

  it('the default limit is 16 MiB: a dataset whose questions.jsonl holds a longer line fails at that line', async () => {
    expect(MAX_QUESTION_LINE_BYTES).toBe(16 * 1024 * 1024);
    const dir = path.join(tmp, 'big');
    mkdirSync(path.join(dir, 'docs'), { recursive: true });
    writeFileSync(path.join(dir, 'docs', 'a.md'), 'Refunds reach your card within five working days.');
    const ok = '{"id": "q1", "question": "refund?", "relevant": ["a.md"]}\n';
    const huge = `{"id": "q2", "question": "${'x'.repeat(MAX_QUESTION_LINE_BYTES)}", "relevant": ["a.md"]}\n`;
    writeFileSync(path.join(dir, 'questions.jsonl'), ok + huge);
    const e = await rejection(loadDataset({ path: dir }));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.location).toEqual({ file: path.join(dir, 'questions.jsonl'), line: 2 });
    expect(e.message).toContain('16 MiB');
  });

  it('invalid UTF-8 is read as U+FFFD and named by line, first among the warnings', async () => {
    const f = path.join(tmp, 'latin1.jsonl');
    writeFileSync(
      f,
      Buffer.concat([
        Buffer.from('{"id": "q1", "question": "caf'),
        Buffer.from([0xe9]),
        Buffer.from('", "relevant": ["a.md"]}\n{"id": "q2", "question": "ok", "relevant": ["b.md", "b.md"]}\n'),
      ]),
    );
    const r = await loadQuestionsFile(f, DOCS, { highWaterMark: 5 });
    expect(r.questions[0].text).toBe('caf\uFFFD');
    expect(r.warnings[0]).toBe(`${f}: 1 line(s) are not valid UTF-8 (line 1); their invalid bytes were read as U+FFFD; save the file as UTF-8`);
    expect(r.warnings).toHaveLength(2); // and the repeated label of line 2
  });
});

describe('BEIR files are bounded the same way', () => {
  it('a queries.jsonl line over 16 MiB is QUESTIONS_INVALID naming the file and line', async () => {
    const dir = path.join(tmp, 'beir');
    mkdirSync(path.join(dir, 'qrels'), { recursive: true });
    writeFileSync(path.join(dir, 'corpus.jsonl'), '{"_id": "d1", "text": "pump"}\n');
    writeFileSync(path.join(dir, 'queries.jsonl'), `{"_id": "1", "text": "pump"}\n{"_id": "2", "text": "${'y'.repeat(MAX_QUESTION_LINE_BYTES)}"}\n`);
    writeFileSync(path.join(dir, 'qrels', 'test.tsv'), '1\td1\t1\n');
    const e = await rejection(loadBeir(dir, 'test'));
    expect(e.code).toBe('QUESTIONS_INVALID');
    expect(e.location).toEqual({ file: path.join(dir, 'queries.jsonl'), line: 2 });
  });
});
