/** TREC qrels and run files: parsing, errors that name file:line, and writing that reads back the same. */
import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HarnessError, isHarnessError } from '../../src/errors.js';
import { formatQrels, formatRun, parseQrels, parseRun, readQrels, readRun } from '../../src/load/trec.js';
import { thrown } from '../helpers/errors.js';


const tmp = mkdtempSync(path.join(tmpdir(), 'rs-trec-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('qrels', () => {
  it('parses qid iter docno grade with spaces or tabs, skipping blank lines, CRLF tolerated', () => {
    const q = parseQrels('q1 0 d1 1\r\n\nq1\t0\td2\t0\nq2 0 d1 3\n', 'x.qrels');
    expect([...q.keys()]).toEqual(['q1', 'q2']);
    expect([...q.get('q1')!]).toEqual([
      ['d1', 1],
      ['d2', 0],
    ]);
    expect(q.get('q2')!.get('d1')).toBe(3);
  });

  it('a line with the wrong number of fields names file:line (a BEIR tsv header is refused)', () => {
    const e = thrown(() => parseQrels('q1 0 d1 1\n\nquery-id corpus-id score\n', 'test.qrels'));
    expect(e.code).toBe('QRELS_INVALID');
    expect(e.location).toEqual({ file: 'test.qrels', line: 3 });
    expect(e.format()).toMatch(/^test\.qrels:3: /);
  });

  it('a grade that is not an integer names file:line', () => {
    for (const g of ['1.5', 'high', '1e2']) {
      const e = thrown(() => parseQrels(`q1 0 d1 1\nq1 0 d2 ${g}\n`, 'g.qrels'));
      expect(e.code).toBe('QRELS_INVALID');
      expect(e.location.line).toBe(2);
    }
  });

  it('a (qid, docno) pair judged twice is refused at the second line, as trec_eval refuses it', () => {
    const e = thrown(() => parseQrels('q1 0 d1 1\nq1 0 d2 1\nq1 0 d1 2\n', 'dup.qrels'));
    expect(e.code).toBe('QRELS_INVALID');
    expect(e.location.line).toBe(3);
  });

  it('formatQrels writes qid then docno order and reads back the same judgements', () => {
    const q = parseQrels('q2 0 b 1\nq1 0 z 0\nq1 0 a 2\n', 'x');
    const text = formatQrels(q);
    expect(text).toBe('q1 0 a 2\nq1 0 z 0\nq2 0 b 1\n');
    expect(parseQrels(text, 'y')).toEqual(
      new Map([
        ['q1', new Map([['a', 2], ['z', 0]])],
        ['q2', new Map([['b', 1]])],
      ]),
    );
  });

  it('readQrels on a missing file fails with QRELS_INVALID naming the file', () => {
    const p = path.join(tmp, 'nope.qrels');
    const e = thrown(() => readQrels(p));
    expect(e.code).toBe('QRELS_INVALID');
    expect(e.location.file).toBe(p);
  });
});

describe('run', () => {
  it('parses qid Q0 docno rank score tag, keeping file order and duplicates', () => {
    const r = parseRun('q1 Q0 a 1 2.5 t\nq1 Q0 b 2 -1e-3 t\nq1 Q0 a 3 .5 t\n', 'x.run');
    expect(r.get('q1')).toEqual([
      { docno: 'a', score: 2.5 },
      { docno: 'b', score: -0.001 },
      { docno: 'a', score: 0.5 },
    ]);
  });

  it('a line with the wrong number of fields names file:line', () => {
    const e = thrown(() => parseRun('q1 Q0 a 1 2.5 t\nq1 Q0 b 2 1.5\n', 'x.run'));
    expect(e.code).toBe('RUN_INVALID');
    expect(e.location).toEqual({ file: 'x.run', line: 2 });
  });

  it('a score that is not a finite decimal number names file:line', () => {
    for (const s of ['abc', 'NaN', 'Infinity', '0x10', '1e999', '']) {
      const e = thrown(() => parseRun(`q1 Q0 a 1 1 t\n\nq1 Q0 b 2 ${s || '-'} t\n`, 'bad.run'));
      expect(e.code, s).toBe('RUN_INVALID');
      expect(e.location.line).toBe(3);
    }
  });

  it('formatRun prints scores that read back to the same double, so trec_eval sorts as we did', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (score) => {
        const text = formatRun([{ qid: 'q', docno: 'd', rank: 1, score }], 'tag');
        const back = parseRun(text, 'r').get('q')![0].score;
        expect(Object.is(back, score) || (back === 0 && score === 0)).toBe(true);
      }),
      { numRuns: 500 },
    );
    expect(formatRun([{ qid: 'q1', docno: 'd1', rank: 1, score: 0.1 + 0.2 }], 'sys')).toBe(
      'q1 Q0 d1 1 0.30000000000000004 sys\n',
    );
  });

  it('formatRun refuses whitespace in names, non-finite scores and bad ranks', () => {
    expect(thrown(() => formatRun([{ qid: 'q 1', docno: 'd', rank: 1, score: 1 }], 't')).code).toBe('RUN_INVALID');
    expect(thrown(() => formatRun([{ qid: 'q', docno: 'd', rank: 1, score: 1 }], 'my tag')).code).toBe('RUN_INVALID');
    expect(thrown(() => formatRun([{ qid: 'q', docno: 'd', rank: 1, score: Number.NaN }], 't')).code).toBe('RUN_INVALID');
    expect(thrown(() => formatRun([{ qid: 'q', docno: 'd', rank: 0, score: 1 }], 't')).code).toBe('RUN_INVALID');
  });

  it('readRun reads a file and names it in errors', () => {
    const p = path.join(tmp, 'r.run');
    writeFileSync(p, 'q1 Q0 a 1 1 t\nq1 Q0 b\n');
    const e = thrown(() => readRun(p));
    expect(isHarnessError(e, 'RUN_INVALID')).toBe(true);
    expect(e.location).toEqual({ file: p, line: 2 });
  });
});
