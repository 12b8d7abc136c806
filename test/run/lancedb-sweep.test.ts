/**
 * LanceDB rows in the sweep (issue 12 §6): `semantic: [{engine: memory}, {engine: lancedb}, {engine: lancedb, index:
 * ivf_pq, ...}]`. Exact LanceDB rows equal the memory rows; ivf_pq rows carry `ann_recall@k` against the exact lists
 * of the same model and chunking; a resumed run reuses every LanceDB unit from its checkpoint. Model: the tiny
 * transformers model our script builds (8 dimensions, so fast). IVF-PQ needs ≥ 256 chunks, so the second dataset is a
 * synthetic BEIR folder of 300 documents written to a temp folder.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { expandGrid } from '../../src/config/expand.js';
import { runSweep } from '../../src/run/sweep.js';
import type { ConfigResult, SweepResult } from '../../src/types.js';
import type { EmbeddingProvider } from '../../src/embed/provider.js';
import { lancedbKeywordRetriever } from '../../src/retrieve/lancedb.js';
import { rankByRule } from '../../src/retrieve/rank.js';
import { loadDataset } from '../../src/load/dataset.js';
import { chunkDocumentsParallel } from '../../src/chunk/parallel.js';
import type { Hit } from '../../src/types.js';
import { buildTinyModel } from '../../scripts/build-tiny-model.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tiny = path.join(repo, 'test/fixtures/sweep/tiny');

let modelDir: string;
beforeAll(async () => {
  modelDir = (await buildTinyModel(path.join(mkdtempSync(path.join(tmpdir(), 'rs-lw-')), 'tiny-bert'))).dir;
}, 120_000);

const row = (r: SweepResult, id: string): ConfigResult => {
  const c = r.configs.find((x) => x.config.id === id);
  if (!c) throw new Error(`no row ${id} in ${r.configs.map((x) => x.config.id).join(', ')}`);
  return c;
};

describe('semantic config key', () => {
  it('defaults to the memory engine, so ids stay <chunking>.semantic.<model>.k<k>', () => {
    const c = parseConfig({ dataset: { path: tiny }, topK: [1], modes: ['semantic'], primaryMetric: 'ndcg@1', embeddings: ['glove-100d'] });
    expect(c.semantic).toEqual([{ engine: 'memory' }]);
    expect(expandGrid(c).map((r) => r.id)).toEqual(['none.semantic.glove-100d.k1']);
  });

  it('names lancedb rows semantic-lance and ivf_pq rows by the parameters given, in config order', () => {
    const c = parseConfig({
      dataset: { path: tiny },
      topK: [1],
      modes: ['semantic'],
      primaryMetric: 'ndcg@1',
      embeddings: ['glove-100d'],
      semantic: [
        { engine: 'memory' },
        { engine: 'lancedb' },
        { engine: 'lancedb', index: 'ivf_pq' },
        { engine: 'lancedb', index: 'ivf_pq', partitions: 16, subVectors: 4, nprobes: 8, refineFactor: 10 },
        { engine: 'lancedb', index: 'ivf_pq', nprobes: 2 },
      ],
    });
    expect(c.semantic[1]).toEqual({ engine: 'lancedb', index: { type: 'flat' } });
    expect(c.semantic[4]).toEqual({ engine: 'lancedb', index: { type: 'ivf_pq', nprobes: 2 } });
    expect(expandGrid(c).map((r) => r.id)).toEqual([
      'none.semantic.glove-100d.k1',
      'none.semantic-lance.glove-100d.k1',
      'none.semantic-lance-ivfpq.glove-100d.k1',
      'none.semantic-lance-ivfpq-p16-s4-n8-r10.glove-100d.k1',
      'none.semantic-lance-ivfpq-n2.glove-100d.k1',
    ]);
    expect(expandGrid(c).every((r) => r.mode === 'semantic')).toBe(true);
  });

  it('refuses ivf_pq parameters on a flat entry, a repeated engine, an unknown key and an unknown engine', () => {
    const base = { dataset: { path: tiny }, topK: [1], modes: ['semantic'], primaryMetric: 'ndcg@1', embeddings: ['glove-100d'] };
    expect(() => parseConfig({ ...base, semantic: [{ engine: 'lancedb', nprobes: 4 }] })).toThrow(/semantic\.0\.nprobes \(4\) applies to index: ivf_pq only/);
    expect(() => parseConfig({ ...base, semantic: [{ engine: 'lancedb' }, { engine: 'lancedb', index: 'flat' }] })).toThrow(/semantic lists the engine semantic-lance twice/);
    expect(() => parseConfig({ ...base, semantic: [{ engine: 'lancedb', probes: 4 }] })).toThrow(/probes/);
    expect(() => parseConfig({ ...base, semantic: [{ engine: 'faiss' }] })).toThrow(/semantic/);
  });
});

describe('LanceDB flat rows on the tiny fixture', () => {
  let first: SweepResult;
  let again: SweepResult;
  beforeAll(async () => {
    const cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-lw-cache-')), 'c');
    const config = parseConfig({
      dataset: { path: tiny },
      chunking: { sizes: ['none', 16], overlap: 4 },
      topK: [1, 3],
      modes: ['semantic', 'hybrid'],
      primaryMetric: 'ndcg@3',
      embeddings: [{ model: `transformers:${modelDir}`, label: 'tiny' }],
      semantic: [{ engine: 'memory' }, { engine: 'lancedb' }],
      cacheDir,
    });
    ({ result: first } = await runSweep(config));
    ({ result: again } = await runSweep(config));
  }, 300_000);

  it('adds a semantic-lance row family after the memory rows; hybrid rows are unchanged', () => {
    expect(first.configs.map((c) => c.config.id)).toEqual([
      'none.semantic.tiny.k1',
      'none.semantic.tiny.k3',
      'none.semantic-lance.tiny.k1',
      'none.semantic-lance.tiny.k3',
      'none.hybrid.tiny.k1',
      'none.hybrid.tiny.k3',
      'cs16-ov4.semantic.tiny.k1',
      'cs16-ov4.semantic.tiny.k3',
      'cs16-ov4.semantic-lance.tiny.k1',
      'cs16-ov4.semantic-lance.tiny.k3',
      'cs16-ov4.hybrid.tiny.k1',
      'cs16-ov4.hybrid.tiny.k3',
    ]);
    expect(first.configs.every((c) => c.status === 'ok')).toBe(true);
  });

  it('gives exact LanceDB rows the memory rows’ rankings and means (scores within float32 rounding)', () => {
    for (const ck of ['none', 'cs16-ov4'])
      for (const k of [1, 3]) {
        const mem = row(first, `${ck}.semantic.tiny.k${k}`);
        const lance = row(first, `${ck}.semantic-lance.tiny.k${k}`);
        expect(Object.keys(lance.means).sort()).toEqual(Object.keys(mem.means).sort());
        for (const name of Object.keys(mem.means)) expect(lance.means[name]).toBeCloseTo(mem.means[name], 10);
        expect(lance.means[`ann_recall@${k}`]).toBeUndefined();
        for (const [j, q] of mem.perQuery.entries()) {
          expect(lance.perQuery[j].retrieved.map((h) => h.chunkId)).toEqual(q.retrieved.map((h) => h.chunkId));
          for (const [i, h] of q.retrieved.entries()) expect(Math.abs(lance.perQuery[j].retrieved[i].score - h.score)).toBeLessThan(1e-6);
        }
      }
  });

  it('records the LanceDB units in the manifest, and a resumed run reuses them from their checkpoints', () => {
    const lance = (r: SweepResult) => (r.manifest.embeddings as { lancedb?: { unit: string; fromCheckpoint?: boolean }[] }[])[0].lancedb!;
    expect(lance(first).map((u) => [u.unit, u.fromCheckpoint])).toEqual([
      ['none.semantic-lance.tiny', false],
      ['cs16-ov4.semantic-lance.tiny', false],
    ]);
    expect(lance(again).map((u) => u.fromCheckpoint)).toEqual([true, true]);
    // 2 chunkings × (keyword + memory + lancedb + hybrid) units reused, plus the 2 chunkings themselves.
    expect((again.manifest.checkpoints as { reused: number }).reused).toBe(2 + 2 * 4);
    for (const c of first.configs) expect(row(again, c.config.id).means).toEqual(c.means);
  });
});

describe('keyword-lance-fts rows on the tiny fixture', () => {
  let first: SweepResult;
  let again: SweepResult;
  let cacheDir: string;
  beforeAll(async () => {
    cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-lw-fts-')), 'c');
    const config = parseConfig({
      dataset: { path: tiny },
      topK: [1, 3],
      modes: ['keyword'],
      primaryMetric: 'ndcg@3',
      keyword: [{ engine: 'bm25' }, { engine: 'lancedb-fts' }],
      cacheDir,
    });
    ({ result: first } = await runSweep(config));
    ({ result: again } = await runSweep(config));
  }, 300_000);

  it('adds a keyword-lance-fts row family after the bm25 rows, serving LanceDB’s lists as the retriever returns them', async () => {
    expect(first.configs.map((c) => c.config.id)).toEqual(['none.keyword.k1', 'none.keyword.k3', 'none.keyword-lance-fts.k1', 'none.keyword-lance-fts.k3']);
    expect(first.configs.every((c) => c.status === 'ok')).toBe(true);
    const fts = row(first, 'none.keyword-lance-fts.k3');
    // q4 (VAT number) and q5 (filter cartridge): the only document holding "vat"/"number", resp. "cartridge", ranks first.
    expect(fts.perQuery.find((q) => q.qid === 'q4')!.retrieved[0].docId).toBe('billing/invoices.md');
    expect(fts.perQuery.find((q) => q.qid === 'q5')!.retrieved[0].docId).toBe('products/filters.txt');
    // The same lists as the retriever called directly on the whole-document chunks (ordered by the tie rule, cut at 3).
    const retriever = await lancedbKeywordRetriever()({
      documents: [],
      chunks: await chunkDocumentsParallel((await loadDataset({ path: tiny })).docs, { size: null, overlap: 0 }),
      chunking: { size: null, overlap: 0 },
      chunkingKey: 'none',
      options: {},
      signal: new AbortController().signal,
      cacheDir,
    });
    try {
      for (const q of fts.perQuery) {
        const text = first.questions.find((x) => x.id === q.qid)!.text;
        const direct = rankByRule((await retriever.search({ id: q.qid, text }, 3, new AbortController().signal)) as Hit[]).slice(0, 3);
        expect(q.retrieved.map((h) => h.chunkId)).toEqual(direct.map((h) => h.id));
      }
    } finally {
      await retriever.close?.();
    }
  });

  it('a resumed run reuses the full-text unit', () => {
    expect((again.manifest.checkpoints as { reused: number }).reused).toBe(1 + 2);
    expect((again.manifest.lancedbFts as { fromCheckpoint: boolean }[]).map((u) => u.fromCheckpoint)).toEqual([true]);
    for (const c of first.configs) expect(row(again, c.config.id).means).toEqual(c.means);
  });
});

/** A BEIR folder of `n` documents of 6 words each (seeded LCG over 200 made-up words `w<i>`) and 12 questions. */
function syntheticBeir(dir: string, n: number): string {
  let seed = 12345;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed;
  };
  const text = (len: number) => Array.from({ length: len }, () => `w${next() % 200}`).join(' ');
  mkdirSync(path.join(dir, 'qrels'), { recursive: true });
  const docs = Array.from({ length: n }, (_, i) => ({ _id: `d${String(i).padStart(3, '0')}`, title: '', text: text(6) }));
  writeFileSync(path.join(dir, 'corpus.jsonl'), docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
  const qs = Array.from({ length: 12 }, (_, i) => ({ _id: `q${i}`, text: text(3) }));
  writeFileSync(path.join(dir, 'queries.jsonl'), qs.map((q) => JSON.stringify(q)).join('\n') + '\n');
  const qrels = qs.map((q, i) => `${q._id}\td${String((i * 25) % n).padStart(3, '0')}\t1`);
  writeFileSync(path.join(dir, 'qrels', 'test.tsv'), ['query-id\tcorpus-id\tscore', ...qrels].join('\n') + '\n');
  return dir;
}

/**
 * A bag-of-words provider: the sum of one seeded pseudo-random 16-dimensional vector per word. Real-valued, so
 * distinct word bags get distinct vectors (the tiny transformers model maps these made-up words all to [UNK], whose
 * exact ties would make LanceDB's choice among tied chunks at the depth cut, not the index, decide ann_recall).
 */
function bagOfWordsProvider(): EmbeddingProvider {
  const d = 16;
  const wordVector = (w: string) => {
    let h = 2166136261;
    for (const ch of w) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
    return Array.from({ length: d }, () => {
      h = (Math.imul(h, 1103515245) + 12345) >>> 0;
      return h / 2 ** 32 - 0.5;
    });
  };
  let open = true;
  return {
    name: 'bag-of-words',
    label: 'bow',
    dimensions: d,
    cacheKey: (role) => `bag-of-words-16 ${role}`,
    embedBatch: async (texts) => {
      if (!open) throw new Error('closed');
      return texts.map((t) => {
        const v = new Float32Array(d);
        for (const w of t.split(/\s+/).filter(Boolean)) wordVector(w).forEach((x, j) => (v[j] += x));
        return v;
      });
    },
    truncatedCount: () => 0,
    describe: () => ({ model: 'bag-of-words', dimensions: d }),
    close: async () => {
      open = false;
    },
  };
}

describe('an ivf_pq row on 300 synthetic documents', () => {
  let result: SweepResult;
  let again: SweepResult;
  let alone: SweepResult;
  beforeAll(async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-lw-ivf-'));
    const configOf = (semantic: unknown[], cacheDir: string) => parseConfig({
      dataset: { path: syntheticBeir(path.join(root, 'beir'), 300) },
      topK: [1, 5],
      modes: ['semantic'],
      primaryMetric: 'ndcg@5',
      embeddings: [],
      semantic,
      statistics: { minQuestions: 5 },
      cacheDir,
    });
    // No memory row in the grid: the exact reference is the lancedb flat unit.
    const config = configOf([{ engine: 'lancedb' }, { engine: 'lancedb', index: 'ivf_pq', partitions: 4, nprobes: 1 }], path.join(root, 'cache'));
    ({ result } = await runSweep(config, { providers: [bagOfWordsProvider()] }));
    ({ result: again } = await runSweep(config, { providers: [bagOfWordsProvider()] }));
    // Neither a memory nor a flat row: the memory exact lists are computed for ann_recall alone.
    ({ result: alone } = await runSweep(configOf([{ engine: 'lancedb', index: 'ivf_pq', partitions: 4, nprobes: 1 }], path.join(root, 'cache2')), { providers: [bagOfWordsProvider()] }));
  }, 300_000);

  it('reports ann_recall@k per question and as a mean: |top-k(ivf) ∩ top-k(exact)| / min(k, |exact|)', () => {
    expect(result.configs.map((c) => c.config.id)).toEqual([
      'none.semantic-lance.bow.k1',
      'none.semantic-lance.bow.k5',
      'none.semantic-lance-ivfpq-p4-n1.bow.k1',
      'none.semantic-lance-ivfpq-p4-n1.bow.k5',
    ]);
    for (const k of [1, 5]) {
      const exact = row(result, `none.semantic-lance.bow.k${k}`);
      const ivf = row(result, `none.semantic-lance-ivfpq-p4-n1.bow.k${k}`);
      expect(ivf.status).toBe('ok');
      expect(exact.means[`ann_recall@${k}`]).toBeUndefined();
      let sum = 0;
      for (const [j, q] of ivf.perQuery.entries()) {
        const truth = new Set(exact.perQuery[j].retrieved.map((h) => h.chunkId));
        const found = q.retrieved.filter((h) => truth.has(h.chunkId)).length;
        const expected = found / Math.min(k, truth.size);
        expect(q.metrics[`ann_recall@${k}`]).toBeCloseTo(expected, 10);
        sum += expected;
      }
      expect(ivf.means[`ann_recall@${k}`]).toBeCloseTo(sum / ivf.perQuery.length, 10);
      expect(ivf.means[`ann_recall@${k}`]).toBeGreaterThanOrEqual(0);
      expect(ivf.means[`ann_recall@${k}`]).toBeLessThanOrEqual(1);
    }
    const desc = (result.manifest.embeddings as { lancedb: { unit: string; describe: { index: { type: string; partitions?: number; nprobes?: number } } }[] }[])[0].lancedb;
    expect(desc[1].unit).toBe('none.semantic-lance-ivfpq-p4-n1.bow');
    expect(desc[1].describe.index).toMatchObject({ type: 'ivf_pq', partitions: 4, nprobes: 1 });
  });

  it('a resumed run reuses both LanceDB units (the random k-means is not redone) and reports the same ann_recall', () => {
    expect((again.manifest.checkpoints as { reused: number }).reused).toBe(1 + 2);
    for (const c of result.configs) expect(row(again, c.config.id).means).toEqual(c.means);
  });

  it('with no exact row in the grid, measures ann_recall against exact lists computed for the purpose', () => {
    expect(alone.configs.map((c) => c.config.id)).toEqual(['none.semantic-lance-ivfpq-p4-n1.bow.k1', 'none.semantic-lance-ivfpq-p4-n1.bow.k5']);
    for (const k of [1, 5]) {
      const ivf = row(alone, `none.semantic-lance-ivfpq-p4-n1.bow.k${k}`);
      // The first sweep's flat rows are the exact lists (no ties among these real-valued vectors).
      const exact = row(result, `none.semantic-lance.bow.k${k}`);
      let sum = 0;
      for (const [j, q] of ivf.perQuery.entries()) {
        const truth = new Set(exact.perQuery[j].retrieved.map((h) => h.chunkId));
        const expected = q.retrieved.filter((h) => truth.has(h.chunkId)).length / Math.min(k, truth.size);
        expect(q.metrics[`ann_recall@${k}`]).toBeCloseTo(expected, 10);
        sum += expected;
      }
      expect(ivf.means[`ann_recall@${k}`]).toBeCloseTo(sum / ivf.perQuery.length, 10);
    }
  });
});
