/**
 * `dataset.sample` (issue 12 §5): every judged document plus seeded random others, recorded and warned about.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { fingerprintDataset, loadDataset } from '../../src/load/dataset.js';
import { judgedDocumentIds, sampleDataset } from '../../src/load/sample.js';
import { seededRandom } from '../../src/score/stats.js';
import type { Dataset, Doc, Question } from '../../src/types.js';
import { rejection } from '../helpers/errors.js';

const ids = ['d00', 'd01', 'd02', 'd03', 'd04', 'd05', 'd06', 'd07', 'd08', 'd09'];
const docs: Doc[] = ids.map((id) => ({ id, text: `text of ${id}` }));
const q = (id: string, extra: Partial<Question>): Question => ({ id, text: `${id}?`, relevant: {}, evidence: [], tags: [], line: 1, ...extra });
const questions: Question[] = [
  q('q1', { relevant: { d01: 1, d02: 0 } }), // grade 0 counts as judged
  q('q2', { relevant: { d03: 2 }, evidence: [{ doc: 'd03', start: 0, end: 4, grade: 2 }] }),
  q('q3', { chunkLabels: { 'd04#2': 1 } }), // a chunk label names its document
  q('q4', { relevant: { gone: 1 } }), // dangling (labels: keep): not a document, not counted
];
const dataset: Dataset = { name: 't', root: '/t', layout: 'folder', docs, questions, fingerprint: fingerprintDataset(docs, questions), warnings: [] };

describe('judgedDocumentIds', () => {
  it('any grade, evidence and chunk labels; dangling ids left out', () => {
    expect([...judgedDocumentIds(docs, questions)].sort()).toEqual(['d01', 'd02', 'd03', 'd04']);
    expect([...judgedDocumentIds(docs, questions, 1)].sort()).toEqual(['d01', 'd03', 'd04']);
  });
});

describe('sampleDataset: sampling keeps judged docs and is seeded', () => {
  it('keeps the 4 judged documents plus 2 others drawn by a seeded partial Fisher-Yates over the 6 others', () => {
    const { dataset: s, sample } = sampleDataset(dataset, { documents: 6, seed: 42 });
    // the draw spelled out: others in id order, two swaps with u from mulberry32(42)
    const others = ['d00', 'd05', 'd06', 'd07', 'd08', 'd09'];
    const u = seededRandom(42);
    const j0 = 0 + Math.floor(u() * 6);
    [others[0], others[j0]] = [others[j0], others[0]];
    const j1 = 1 + Math.floor(u() * 5);
    [others[1], others[j1]] = [others[j1], others[1]];
    const expected = ['d01', 'd02', 'd03', 'd04', others[0], others[1]].sort();
    expect(s.docs.map((d) => d.id)).toEqual(expected);
    expect(sample).toEqual({ documents: 6, seed: 42, judged: 4, kept: 6, total: 10 });
    expect(s.sample).toEqual(sample);
    expect(s.questions).toBe(questions); // all questions kept
    expect(s.fingerprint).toBe(fingerprintDataset(s.docs, questions));
    expect(s.fingerprint).not.toBe(dataset.fingerprint);
    // 2 of the 6 distractors kept: 100 * (1 - 2/6) = 66.7% fewer
    expect(s.warnings).toEqual([
      'metrics are on a sample of 6 of 10 documents (every judged document, 4, plus 2 random others, seed 42): with 66.7% fewer distractors than the full corpus, they are optimistic',
    ]);
  });

  it('same seed = same sample; different seeds give different samples', () => {
    const pick = (seed: number) => sampleDataset(dataset, { documents: 6, seed }).dataset.docs.map((d) => d.id).join(',');
    expect(pick(42)).toBe(pick(42));
    // 15 possible pairs of others; 20 seeds cannot all draw the same one unless the seed is ignored
    expect(new Set(Array.from({ length: 20 }, (_, i) => pick(i))).size).toBeGreaterThan(1);
  });

  it('does not change its input', () => {
    const before = JSON.stringify(dataset);
    sampleDataset(dataset, { documents: 5, seed: 1 });
    expect(JSON.stringify(dataset)).toBe(before);
  });

  it('fewer documents asked than judged: every judged document kept, with a warning', () => {
    const { dataset: s, sample } = sampleDataset(dataset, { documents: 2, seed: 42 });
    expect(s.docs.map((d) => d.id)).toEqual(['d01', 'd02', 'd03', 'd04']);
    expect(sample).toEqual({ documents: 2, seed: 42, judged: 4, kept: 4, total: 10 });
    expect(s.warnings[0]).toContain('smaller than the 4 judged documents');
    // 0 of 6 distractors: 100% fewer
    expect(s.warnings[1]).toContain('with 100.0% fewer distractors');
  });

  it('a sample as large as the corpus keeps everything, and the fingerprint is the full one', () => {
    const { dataset: s, sample } = sampleDataset(dataset, { documents: 50, seed: 42 });
    expect(s.docs).toEqual(docs);
    expect(s.fingerprint).toBe(dataset.fingerprint);
    expect(sample.kept).toBe(10);
    expect(s.warnings).toEqual(['dataset.sample.documents (50) covers the whole corpus (10 documents): metrics are on the full corpus']);
  });
});

describe('dataset.sample through loadDataset and the config', () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'rs-sample-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const root = path.join(tmp, 'beir');
  mkdirSync(path.join(root, 'qrels'), { recursive: true });
  writeFileSync(path.join(root, 'corpus.jsonl'), Array.from({ length: 20 }, (_, i) => JSON.stringify({ _id: `c${i}`, text: `doc ${i}` })).join('\n'));
  writeFileSync(path.join(root, 'queries.jsonl'), '{"_id": "a", "text": "alpha"}\n{"_id": "b", "text": "beta"}\n');
  writeFileSync(path.join(root, 'qrels', 'test.tsv'), 'a\tc3\t1\nb\tc17\t0\n');

  it('loadDataset applies the sample after loading: judged c3 and c17 kept, fingerprint of the sample', async () => {
    const full = await loadDataset({ path: root });
    const ds = await loadDataset({ path: root, sample: { documents: 5, seed: 42 } });
    expect(ds.docs).toHaveLength(5);
    expect(ds.docs.map((d) => d.id)).toEqual(expect.arrayContaining(['c3', 'c17']));
    expect(ds.sample).toEqual({ documents: 5, seed: 42, judged: 2, kept: 5, total: 20 });
    expect(ds.fingerprint).toBe(fingerprintDataset(ds.docs, ds.questions));
    expect(ds.fingerprint).not.toBe(full.fingerprint);
    expect(full.sample).toBeUndefined();
    // 3 of 18 distractors kept: 100 * (1 - 3/18) = 83.3% fewer
    expect(ds.warnings.at(-1)).toContain('sample of 5 of 20 documents (every judged document, 2, plus 3 random others, seed 42): with 83.3% fewer distractors');
  });

  it('a bad sample from a library caller -> CONFIG_INVALID naming the key', async () => {
    const e = await rejection(loadDataset({ path: root, sample: { documents: 0, seed: 42 } }));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.location.path).toBe('dataset.sample.documents');
  });

  it('the config key: seed defaults to 42; documents must be an integer >= 1; unknown keys refused', () => {
    expect(parseConfig({ dataset: { path: root, sample: { documents: 100 } } }).dataset.sample).toEqual({ documents: 100, seed: 42 });
    expect(parseConfig({ dataset: { path: root } }).dataset.sample).toBeUndefined();
    expect(() => parseConfig({ dataset: { path: root, sample: { documents: 0 } } })).toThrow();
    expect(() => parseConfig({ dataset: { path: root, sample: { documents: 10, seeds: 1 } } })).toThrow();
  });
});
