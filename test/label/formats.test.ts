import { appendFileSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  foldJudgments,
  openJudgmentLog,
  pairKey,
  readJudgments,
  readPool,
  resolveLabels,
  writePool,
  type Judgment,
  type PoolHeader,
  type PoolPair,
} from '../../src/label/formats.js';
import { thrown } from '../helpers/errors.js';

const dir = () => mkdtempSync(path.join(tmpdir(), 'rs-label-'));
const j = (assessor: string, action: Judgment['action'], grade?: number, doc = 'a.md'): Judgment => ({
  v: 1,
  time: '2026-12-03T00:00:00.000Z',
  assessor,
  action,
  qid: 'q1',
  doc,
  start: 0,
  end: 10,
  ...(grade !== undefined ? { grade } : {}),
});

describe('judgments log', () => {
  it('appends durably and reads back every line in order', () => {
    const f = path.join(dir(), 'q.jsonl.judgments.jsonl');
    const log = openJudgmentLog(f);
    log.append(j('alice', 'grade', 2), j('alice', 'grade', 3, 'b.md'));
    log.close();
    const r = readJudgments(f);
    expect(r.judgments.map((x) => x.grade)).toEqual([2, 3]);
    expect(r.partialTail).toBe('');
  });

  it('appendMany takes a list longer than a call can spread (150,000 judgments) in one write', () => {
    const f = path.join(dir(), 'many.judgments.jsonl');
    const log = openJudgmentLog(f);
    const n = 150_000;
    const many = Array.from({ length: n }, (_, i) => j('llm:m', 'grade', i % 4, `d${i}.md`));
    log.appendMany(many);
    expect(log.judgments).toHaveLength(n);
    log.close();
    const lines = readFileSync(f, 'utf8').split('\n');
    expect(lines).toHaveLength(n + 1); // n lines, each ending in a newline
    expect(JSON.parse(lines[n - 1]!).doc).toBe(`d${n - 1}.md`);
  });

  it('a line cut mid-write is moved to a side file and the complete lines are kept', () => {
    const d = dir();
    const f = path.join(d, 'labels.judgments.jsonl');
    const log = openJudgmentLog(f);
    log.append(j('alice', 'grade', 1));
    log.close();
    appendFileSync(f, '{"v":1,"time":"2026');
    const again = openJudgmentLog(f);
    expect(again.judgments).toHaveLength(1);
    expect(again.warnings[0]).toContain('cut mid-write');
    again.append(j('alice', 'grade', 2, 'b.md'));
    again.close();
    expect(readJudgments(f).judgments).toHaveLength(2);
    expect(readdirSync(d).some((n) => n.includes('.partial-'))).toBe(true);
  });

  it('a complete line that is not a judgment is an error naming the line', () => {
    const f = path.join(dir(), 'l.judgments.jsonl');
    writeFileSync(f, JSON.stringify(j('alice', 'grade', 1)) + '\n{"v":1}\n');
    const e = thrown(() => readJudgments(f));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.location.line).toBe(2);
  });

  it('undo removes the assessor\'s last grade; a person wins over a model', () => {
    const log = [j('llm:m', 'grade', 3), j('alice', 'grade', 1), j('alice', 'grade', 2), j('alice', 'undo')];
    const state = foldJudgments(log).get(pairKey(log[0]))!;
    expect(state.get('alice')!.grade).toBe(1);
    const [label] = resolveLabels(log);
    expect(label.grade).toBe(1);
    expect(label.source).toBe('human');
    expect(resolveLabels([j('llm:m', 'grade', 3)])[0].source).toBe('llm');
    expect(resolveLabels([j('alice', 'grade', 2), j('alice', 'undo')])).toEqual([]);
  });
});

describe('pool file', () => {
  const header = (pairs: number): PoolHeader => ({
    format: 'retrieval-sweep.pool',
    version: 1,
    dataset: { name: 'demo', root: '/d', corpus: 'abc' },
    results: '/r',
    level: 'document',
    depth: 10,
    rows: ['none.keyword.k10'],
    pairs,
    threshold: 1,
  });
  const pair = (n: number): PoolPair => ({
    pair: n, qid: 'q1', question: 'Q?', doc: `d${n}`, start: 0, end: 3, passage: 'abc', rows: ['none.keyword.k10'], bestRank: n,
  });

  it('round-trips header and pairs', () => {
    const f = path.join(dir(), 'pool.jsonl');
    writePool(f, header(2), [pair(1), pair(2)]);
    const r = readPool(f);
    expect(r.header.dataset.corpus).toBe('abc');
    expect(r.pairs.map((p) => p.doc)).toEqual(['d1', 'd2']);
  });

  it('a pool cut short is refused, naming the count', () => {
    const f = path.join(dir(), 'pool.jsonl');
    writePool(f, header(2), [pair(1), pair(2)]);
    const lines = readFileSync(f, 'utf8').trimEnd().split('\n');
    writeFileSync(f, lines.slice(0, 2).join('\n') + '\n');
    const e = thrown(() => readPool(f));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.message).toContain('2 pairs');
  });

  it('a file that is not a pool is refused on line 1', () => {
    const f = path.join(dir(), 'x.jsonl');
    writeFileSync(f, '{"id":"q1"}\n');
    expect(thrown(() => readPool(f)).location.line).toBe(1);
  });
});

describe('pool file: what --out may replace', () => {
  it('refuses to replace a file that is not a pool (a results folder\'s per-query.jsonl) and leaves it as it was', () => {
    const d = dir();
    const f = path.join(d, 'per-query.jsonl');
    writeFileSync(f, '{"config_id":"x"}\n');
    const header: PoolHeader = {
      format: 'retrieval-sweep.pool', version: 1, dataset: { name: 'demo', root: '/d', corpus: 'abc' }, results: '/r',
      level: 'document', depth: 10, rows: [], pairs: 0, threshold: 1,
    };
    const e = thrown(() => writePool(f, header, []));
    expect(e.code).toBe('OUTPUT_INVALID');
    expect(readFileSync(f, 'utf8')).toBe('{"config_id":"x"}\n');
    expect(thrown(() => writePool(d, header, [])).message).toContain('not a regular file');
    // An earlier pool is replaced.
    const p = path.join(d, 'pool.jsonl');
    writePool(p, header, []);
    writePool(p, { ...header, depth: 5 }, []);
    expect(readPool(p).header.depth).toBe(5);
  });
});
