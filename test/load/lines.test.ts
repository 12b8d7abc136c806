/**
 * Streaming line reader (src/load/lines.ts) and the BEIR loader over it: tiny read sizes cut lines, CRLF pairs,
 * BOMs and multi-byte characters across chunk boundaries; line numbers must stay exact.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBeir } from '../../src/load/beir.js';
import { forEachLine, LineTooLongError } from '../../src/load/lines.js';
import { rejection } from '../helpers/errors.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'rs-lines-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The rule the loaders used on a whole string: split on \n, drop one trailing \r, drop a leading BOM. */
function oracle(text: string): [string, number][] {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const parts = body.split('\n');
  if (parts[parts.length - 1] === '') parts.pop();
  return parts.map((l, i) => [l.endsWith('\r') ? l.slice(0, -1) : l, i + 1]);
}

async function collect(file: string, highWaterMark: number): Promise<{ lines: [string, number][]; utf8: boolean[] }> {
  const lines: [string, number][] = [];
  const utf8: boolean[] = [];
  await forEachLine(file, (l, n, ok) => {
    lines.push([l, n]);
    utf8.push(ok);
  }, { highWaterMark });
  return { lines, utf8 };
}

describe('forEachLine: streaming line numbers across chunk boundaries', () => {
  // BOM, CRLF, a blank line, a lone \r inside a line, 2-, 3- and 4-byte UTF-8 characters, no final newline
  const text = '\uFEFFfirst\r\nsecond é\n\n€ third\r\r\nfourth 😀 x\rkept\nlast';
  const file = path.join(tmp, 'mixed.txt');
  writeFileSync(file, text);

  it.each([1, 2, 3, 5, 7, 64, 1 << 20])('highWaterMark %i gives the whole-string split, line for line', async (hwm) => {
    const { lines, utf8 } = await collect(file, hwm);
    expect(lines).toEqual(oracle(text));
    // spelled out: line 3 is blank, line 4 keeps the \r before its CRLF's \r, line 5 keeps its inner \r
    expect(lines).toEqual([
      ['first', 1],
      ['second é', 2],
      ['', 3],
      ['€ third\r', 4],
      ['fourth 😀 x\rkept', 5],
      ['last', 6],
    ]);
    expect(utf8.every((v) => v)).toBe(true);
  });

  it('a line longer than many chunks is joined whole', async () => {
    const long = 'x'.repeat(10_000) + 'é'.repeat(3_000);
    const f = path.join(tmp, 'long.txt');
    writeFileSync(f, `a\n${long}\nb\n`);
    const { lines } = await collect(f, 3);
    expect(lines).toEqual([
      ['a', 1],
      [long, 2],
      ['b', 3],
    ]);
  });

  it('invalid UTF-8 on a line: U+FFFD as readFile(utf8) gives, and the line flagged', async () => {
    const f = path.join(tmp, 'bad.txt');
    writeFileSync(f, Buffer.concat([Buffer.from('ok\ncaf'), Buffer.from([0xe9]), Buffer.from('\nok\n')]));
    const { lines, utf8 } = await collect(f, 2);
    expect(lines).toEqual([
      ['ok', 1],
      ['caf\uFFFD', 2],
      ['ok', 3],
    ]);
    expect(utf8).toEqual([true, false, true]);
  });

  it('an error thrown by the callback stops reading and propagates unchanged', async () => {
    const seen: number[] = [];
    const boom = new Error('stop');
    await expect(
      forEachLine(file, (_l, n) => {
        seen.push(n);
        if (n === 2) throw boom;
      }, { highWaterMark: 1 }),
    ).rejects.toBe(boom);
    expect(seen).toEqual([1, 2]);
  });
});

/** A BEIR folder from corpus lines, query lines and qrels rows. */
function beir(name: string, corpus: string | Buffer, queries: string, qrels: string): string {
  const root = path.join(tmp, name);
  mkdirSync(path.join(root, 'qrels'), { recursive: true });
  writeFileSync(path.join(root, 'corpus.jsonl'), corpus);
  writeFileSync(path.join(root, 'queries.jsonl'), queries);
  writeFileSync(path.join(root, 'qrels', 'test.tsv'), qrels);
  return root;
}

describe('forEachLine with direct (O_DIRECT) reads', () => {
  /** Lines, their numbers and UTF-8 flags, read with `opts`. */
  async function read(file: string, opts: Parameters<typeof forEachLine>[2]): Promise<[string, number, boolean][]> {
    const out: [string, number, boolean][] = [];
    await forEachLine(file, (l, n, ok) => void out.push([l, n, ok]), opts);
    return out;
  }
  // BOM, CRLF, blank lines, invalid UTF-8, 2-4 byte characters, lines of 0 to 200k bytes (longer than a 64 KiB
  // chunk), so chunk boundaries fall everywhere; sizes below, at and above a multiple of 64 KiB
  function corpus(bytes: number): Buffer {
    const parts: Buffer[] = [Buffer.from('\uFEFFhead\r\n')];
    let n = parts[0].length;
    for (let i = 0; n < bytes; i++) {
      const body = i % 97 === 50 ? 'x'.repeat(200_000) : `line ${i} é€😀 ${'y'.repeat((i * 7919) % 3000)}`;
      const line = Buffer.concat([Buffer.from(body), i % 13 === 0 ? Buffer.from([0xff, 0xfe]) : Buffer.alloc(0), Buffer.from(i % 5 === 0 ? '\r\n' : i % 11 === 0 ? '\n\n' : '\n')]);
      parts.push(line);
      n += line.length;
    }
    return Buffer.concat(parts).subarray(0, bytes);
  }

  it.each([3 * 65536 + 123, 4 * 65536, 1_000_003])('%i bytes: the same lines as through the page cache, at 64 KiB and 1 MiB chunks', async (bytes) => {
    const file = path.join(tmp, `direct-${bytes}.txt`);
    writeFileSync(file, corpus(bytes));
    const buffered = await read(file, { highWaterMark: 4096 });
    expect(buffered.length).toBeGreaterThan(50);
    expect(await read(file, { direct: true, highWaterMark: 1 })).toEqual(buffered);
    expect(await read(file, { direct: true })).toEqual(buffered);
  });

  it('a line over maxLineBytes and an error of the callback stop a direct read as they stop the other', async () => {
    const file = path.join(tmp, 'direct-limit.txt');
    writeFileSync(file, corpus(700_000));
    const thrown = (p: Promise<unknown>) => p.then(() => new Error('expected a rejection'), (e: unknown) => e);
    const limit = (direct: boolean) => thrown(forEachLine(file, () => undefined, { direct, maxLineBytes: 150_000 }));
    const [a, b] = [await limit(false), await limit(true)];
    expect(b).toBeInstanceOf(LineTooLongError);
    expect((b as LineTooLongError).lineNo).toBe((a as LineTooLongError).lineNo);
    const stop = new Error('stop at line 30');
    const seen: number[] = [];
    const err = await thrown(
      forEachLine(file, (_, n) => {
        seen.push(n);
        if (n === 30) throw stop;
      }, { direct: true, highWaterMark: 1 }),
    );
    expect(err).toBe(stop);
    expect(seen.length).toBe(30);
  });
});

describe('loadBeir over the streaming reader', () => {
  const corpus = [
    '\uFEFF{"_id": "d1", "title": "Fuses", "text": "The pump takes a 5 A fuse."}',
    '{"_id": "d2", "text": "Routers reset with a pin: é€😀."}',
    '',
    '{"_id": "d3", "text": "Warranty lasts two years."}',
  ].join('\r\n');
  const queries = '{"_id": "q1", "text": "pump fuse"}\n{"_id": "q2", "text": "reset"}\n';
  const qrels = 'query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2\td2\t2\r\n';

  it('the same docs and questions at every read size', async () => {
    const root = beir('small', corpus, queries, qrels);
    const whole = await loadBeir(root, 'test');
    for (const hwm of [1, 2, 3, 7, 16]) expect(await loadBeir(root, 'test', { highWaterMark: hwm })).toEqual(whole);
    expect(whole.docs.map((d) => d.id)).toEqual(['d1', 'd2', 'd3']);
    expect(whole.docs[0].text).toBe('Fuses\n\nThe pump takes a 5 A fuse.');
    expect(whole.questions.map((q) => [q.id, q.relevant, q.line])).toEqual([
      ['q1', { d1: 1 }, 1],
      ['q2', { d2: 2 }, 2],
    ]);
  });

  it('a corrupt corpus line is named by its line number, with 1-byte reads', async () => {
    // line 1 d1 (after the BOM), 2 d2, 3 blank, 4 d3, 5 the line cut off
    const broken = corpus + '\r\n{"_id": "d4", "text": "cut off';
    const root = beir('corrupt', broken, queries, qrels);
    const e = await rejection(loadBeir(root, 'test', { highWaterMark: 1 }));
    expect(e.code).toBe('DOCUMENT_INVALID');
    expect(e.location).toEqual({ file: path.join(root, 'corpus.jsonl'), line: 5 });
  });

  it('a corrupt qrels row is named by its line number', async () => {
    const root = beir('corrupt-qrels', corpus, queries, qrels + 'q2\td3\n');
    const e = await rejection(loadBeir(root, 'test', { highWaterMark: 4 }));
    expect(e.code).toBe('QRELS_INVALID');
    expect(e.location).toEqual({ file: path.join(root, 'qrels', 'test.tsv'), line: 4 });
  });

  it('corpus lines that are not valid UTF-8 are listed in one warning by line number', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"_id": "d1", "text": "caf'),
      Buffer.from([0xe9]),
      Buffer.from('"}\n{"_id": "d2", "text": "ok"}\n'),
    ]);
    const root = beir('latin1', bytes, queries.split('\n')[0] + '\n', 'q1\td1\t1\n');
    const { docs, warnings } = await loadBeir(root, 'test', { highWaterMark: 5 });
    expect(docs[0].text).toBe('caf\uFFFD');
    expect(warnings).toEqual([`${path.join(root, 'corpus.jsonl')}: 1 line(s) not valid UTF-8 (invalid bytes read as U+FFFD): line 1; convert the file to UTF-8`]);
  });
});

describe('BEIR warnings (issue 13 §2)', () => {
  it('BEIR empty document warned with the questions it is relevant to', async () => {
    // Cranfield's case: 471 and 995 have no text; 995 is relevant to query 125, 471 to none
    const root = beir(
      'cranfield-like',
      [
        '{"_id": "1", "title": "experimental investigation", "text": "of the aerodynamics of a wing"}',
        '{"_id": "471", "title": "", "text": ""}',
        '{"_id": "995", "title": "", "text": "  "}',
      ].join('\n'),
      '{"_id": "125", "text": "papers on shock-sound wave interaction"}\n{"_id": "1", "text": "wing aerodynamics"}\n',
      '125\t995\t2\n125\t1\t0\n1\t1\t1\n',
    );
    const { docs, warnings } = await loadBeir(root, 'test');
    expect(docs.map((d) => d.id)).toEqual(['1', '471', '995']); // kept, as the folder layout keeps empty files
    const corpusFile = path.join(root, 'corpus.jsonl');
    expect(warnings).toEqual([
      `${corpusFile}:2: document 471 has no text (kept; it yields no chunks and is never retrieved); no question judges it`,
      `${corpusFile}:3: document 995 has no text (kept; it yields no chunks and is never retrieved); relevant to 1 question(s), which cannot find it: 125 (grade 2)`,
    ]);
  });

  it('BEIR queries without qrels counted', async () => {
    // 4 queries, 1 judged by qrels/test.tsv: 3 left out, in one warning (not one each)
    const root = beir(
      'unjudged',
      '{"_id": "d1", "text": "a"}\n',
      ['a', 'b', 'c', 'd'].map((q) => JSON.stringify({ _id: q, text: `query ${q}` })).join('\n'),
      'c\td1\t1\n',
    );
    const { questions, warnings } = await loadBeir(root, 'test');
    expect(questions.map((q) => q.id)).toEqual(['c']);
    expect(warnings).toEqual([
      `${path.join(root, 'queries.jsonl')}: 3 of 4 queries have no judgement in qrels/test.tsv and are left out ` +
        '(BEIR shares queries.jsonl between splits; each split judges its own queries)',
    ]);
  });

  it('a missing corpus.jsonl is DATASET_NOT_FOUND naming it', async () => {
    const root = beir('nocorpus', '', '', '');
    rmSync(path.join(root, 'corpus.jsonl'));
    const e = await rejection(loadBeir(root, 'test'));
    expect(e.code).toBe('DATASET_NOT_FOUND');
    expect(e.location.file).toBe(path.join(root, 'corpus.jsonl'));
  });
});
