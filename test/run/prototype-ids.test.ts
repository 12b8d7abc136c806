/**
 * Issue 24 §5: id-keyed tables are safe for any id. Question ids and document ids named `__proto__`, `constructor`,
 * `hasOwnProperty` and `toString` go through load (BEIR layout) → run (keyword, plus an imported TREC run named
 * `constructor`) → metrics → the runs export and per-query.jsonl, and every value is the one worked out by hand: none
 * of them is dropped (a `__proto__` key assigned on a plain object is silently ignored) or read from Object.prototype
 * (a `constructor` label read from a plain object is a function).
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { loadDataset } from '../../src/load/dataset.js';
import { evaluate } from '../../src/score/evaluate.js';
import { parseMeasure } from '../../src/score/measures.js';
import { parseQrels, parseRun } from '../../src/load/trec.js';

let root: string;
let out: string;
const perQuery: { config_id: string; qid: string; ranked_docs: string[]; metrics: Record<string, number> }[] = [];

const Q = ['__proto__', 'constructor', 'hasOwnProperty'] as const;

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rs-proto-'));
  const ds = path.join(root, 'ds');
  mkdirSync(path.join(ds, 'qrels'), { recursive: true });
  const corpus = [
    ['__proto__', 'alpha alpha alpha'],
    ['constructor', 'bravo bravo'],
    ['hasOwnProperty', 'charlie charlie'],
    ['toString', 'charlie delta'],
    ['plain', 'echo'],
  ];
  writeFileSync(path.join(ds, 'corpus.jsonl'), corpus.map(([id, text]) => JSON.stringify({ _id: id, text })).join('\n') + '\n');
  writeFileSync(
    path.join(ds, 'queries.jsonl'),
    [
      ['__proto__', 'alpha'],
      ['constructor', 'bravo'],
      ['hasOwnProperty', 'charlie'],
    ]
      .map(([id, text]) => JSON.stringify({ _id: id, text }))
      .join('\n') + '\n',
  );
  // __proto__ -> __proto__ (2); constructor -> constructor (1); hasOwnProperty -> hasOwnProperty (1), toString (1)
  writeFileSync(
    path.join(ds, 'qrels', 'test.tsv'),
    'query-id\tcorpus-id\tscore\n__proto__\t__proto__\t2\nconstructor\tconstructor\t1\nhasOwnProperty\thasOwnProperty\t1\nhasOwnProperty\ttoString\t1\n',
  );
  // An imported run that puts the judged document second for every question (named `constructor`, too).
  writeFileSync(
    path.join(root, 'imported.trec'),
    [
      '__proto__ Q0 plain 1 2 x',
      '__proto__ Q0 __proto__ 2 1 x',
      'constructor Q0 toString 1 2 x',
      'constructor Q0 constructor 2 1 x',
      'hasOwnProperty Q0 plain 1 2 x',
      'hasOwnProperty Q0 hasOwnProperty 2 1 x',
    ].join('\n') + '\n',
  );
  const cfg = path.join(root, 'proto.yaml');
  writeFileSync(
    cfg,
    `name: proto\ndataset: { path: ${ds} }\ntopK: [1, 2]\nprimaryMetric: ndcg@2\nmodes: [keyword]\n` +
      `runs: [{ name: constructor, path: ${path.join(root, 'imported.trec')} }]\ncacheDir: ${path.join(root, 'cache')}\n`,
  );
  out = path.join(root, 'out');
  let err = '';
  const code = await runCli(['node', 'retrieval-sweep', 'run', cfg, '--out', out], { stdout: () => undefined, stderr: (s) => void (err += s) });
  process.exitCode = undefined;
  expect(err, err).not.toMatch(/^error/m);
  expect(code).toBe(0);
  for (const line of readFileSync(path.join(out, 'per-query.jsonl'), 'utf8').split('\n')) if (line !== '') perQuery.push(JSON.parse(line));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('ids that are Object.prototype names', () => {
  it('load keeps every question and every label, as own entries', async () => {
    const ds = await loadDataset({ path: path.join(root, 'ds') });
    expect(ds.docs.map((d) => d.id)).toEqual(['__proto__', 'constructor', 'hasOwnProperty', 'plain', 'toString']);
    expect(ds.questions.map((q) => q.id)).toEqual([...Q]);
    const rel = ds.questions.map((q) => Object.entries(q.relevant));
    expect(rel).toEqual([[['__proto__', 2]], [['constructor', 1]], [['hasOwnProperty', 1], ['toString', 1]]]);
  });

  it('evaluate scores them as trec_eval does', () => {
    const qrels = parseQrels('__proto__ 0 __proto__ 2\nconstructor 0 constructor 1\nhasOwnProperty 0 toString 1\n', 'q');
    const run = parseRun('__proto__ Q0 __proto__ 1 3 r\nconstructor Q0 plain 1 3 r\nconstructor Q0 constructor 2 2 r\nhasOwnProperty Q0 toString 1 1 r\n', 'r');
    const r = evaluate(qrels, run, ['ndcg@2', 'recall@1'].map((m) => parseMeasure(m)));
    expect(Object.keys(r.perQuery).sort()).toEqual([...Q].sort());
    expect(r.perQuery[String(Q[1])]['ndcg@2']).toBeCloseTo(1 / Math.log2(3) / 1, 10);
    expect(r.mean['recall@1']).toBeCloseTo((1 + 0 + 1) / 3, 10);
  });

  it('per-query.jsonl holds every question of every row, with the hand-worked values', () => {
    const keyword2 = perQuery.filter((p) => p.config_id === 'none.keyword.k2');
    expect(keyword2.map((p) => p.qid)).toEqual([...Q]);
    expect(keyword2.map((p) => p.ranked_docs)).toEqual([['__proto__'], ['constructor'], ['hasOwnProperty', 'toString']]);
    for (const p of keyword2) expect(p.metrics['ndcg@2']).toBeCloseTo(1, 10);
    const keyword1 = perQuery.filter((p) => p.config_id === 'none.keyword.k1');
    expect(keyword1.map((p) => p.metrics['recall@1'])).toEqual([1, 1, 1 / 2]);
    const imported = perQuery.filter((p) => p.config_id.includes('constructor') && p.config_id.endsWith('k2'));
    expect(imported.map((p) => p.qid)).toEqual([...Q]);
    // the judged document at rank 2: ndcg@2 = (g/log2(3)) / (g/log2(2)) for one relevant document; for hasOwnProperty
    // two relevant (grade 1): DCG = 1/log2(3), ideal = 1/log2(2) + 1/log2(3)
    expect(imported[0].metrics['ndcg@2']).toBeCloseTo(2 / Math.log2(3) / (2 / Math.log2(2)), 10);
    expect(imported[1].metrics['ndcg@2']).toBeCloseTo(1 / Math.log2(3) / (1 / Math.log2(2)), 10);
    expect(imported[2].metrics['ndcg@2']).toBeCloseTo(1 / Math.log2(3) / (1 / Math.log2(2) + 1 / Math.log2(3)), 10);
  });

  it('matrix.csv means are over all three questions', () => {
    const [header, ...rows] = readFileSync(path.join(out, 'matrix.csv'), 'utf8').trim().split('\n').map((l) => l.split(','));
    const col = (name: string) => header.indexOf(name);
    const k1 = rows.find((r) => r[0] === 'none.keyword.k1')!;
    expect(Number(k1[col('questions')])).toBe(3);
    expect(Number(k1[col('recall')])).toBeCloseTo((1 + 1 + 1 / 2) / 3, 10);
  });

  it('the exported runs and qrels.trec name every question and document', () => {
    const runs = readdirSync(path.join(out, 'runs'));
    const kw = readFileSync(path.join(out, 'runs', runs.find((f) => f.startsWith('none.keyword.k2'))!), 'utf8');
    expect(kw.trim().split('\n').map((l) => l.split(' ').slice(0, 3).join(' '))).toEqual([
      '__proto__ Q0 __proto__',
      'constructor Q0 constructor',
      'hasOwnProperty Q0 hasOwnProperty',
      'hasOwnProperty Q0 toString',
    ]);
    const qrels = readFileSync(path.join(out, 'qrels.trec'), 'utf8');
    for (const line of ['__proto__ 0 __proto__ 2', 'constructor 0 constructor 1', 'hasOwnProperty 0 hasOwnProperty 1', 'hasOwnProperty 0 toString 1'])
      expect(qrels).toContain(line);
  });
});
