/**
 * Correctness of the benchmark's pieces (not its timings): the subset rule, the LlamaIndex embedding adapter, the
 * naive VectorStoreIndex loop against the harness's exact-cosine index, and the comparison helpers.
 */
import { describe, expect, it } from 'vitest';
import { Settings } from 'llamaindex';
import type { Chunk, Dataset, Doc, Question } from '../../src/types.js';
import type { EmbeddingProvider, EmbedRole } from '../../src/embed/provider.js';
import { buildVectorIndex } from '../../src/retrieve/semantic.js';
import { subsetDataset, benchConfig } from '../../bench/setup.js';
import { CountingProviderEmbedding as ProviderEmbedding, runNaiveSemantic, compareMeans, compareRankings } from '../../bench/naive.js';
import { expandGrid } from '../../src/config/expand.js';

/** A provider with fixed 2-d vectors per text; records every call. Unknown texts get [0, 0]. */
function fakeProvider(vectors: Record<string, [number, number]>): EmbeddingProvider & { calls: { texts: string[]; role: EmbedRole }[] } {
  const calls: { texts: string[]; role: EmbedRole }[] = [];
  return {
    name: 'fake',
    label: 'fake',
    dimensions: 2,
    calls,
    cacheKey: (role) => `fake-${role}`,
    embedBatch: async (texts, role) => {
      calls.push({ texts: [...texts], role });
      return texts.map((t) => Float32Array.from(vectors[t] ?? [0, 0]));
    },
    truncatedCount: () => 0,
    describe: () => ({}),
    close: async () => {},
  };
}

function chunk(docId: string, text: string): Chunk {
  return { id: `${docId}#0`, docId, ordinal: 0, text, start: 0, end: text.length, tokens: 1 };
}

function question(id: string, text: string, relevant: Record<string, number>): Question {
  return { id, text, relevant, evidence: [], tags: [], line: 0 };
}

describe('subset rule: judged documents plus the first N others in id order', () => {
  const docs: Doc[] = ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => ({ id, text: `text of ${id}` }));
  const questions = [question('q1', 'x', { e: 1, b: 0 }), question('q2', 'y', { c: 2 }), question('q3', 'z', { f: 1 })];
  const dataset: Dataset = { name: 't', root: '/t', layout: 'beir', docs, questions, fingerprint: 'orig', warnings: [] };

  it('keeps every judged document and the first others in document order; grade 0 is not judged', () => {
    const { dataset: d, subset } = subsetDataset(dataset, 2);
    // judged: e, c, f (b has grade 0); others in order a, b, d → the first 2 are a, b
    expect(d.docs.map((x) => x.id)).toEqual(['a', 'b', 'c', 'e', 'f']);
    expect(subset).toMatchObject({ judgedDocs: 3, otherDocs: 2, docs: 5, corpusDocs: 6, questions: 3, corpusQuestions: 3 });
    expect(d.fingerprint).not.toBe('orig');
    expect(dataset.docs).toHaveLength(6); // input unchanged
  });

  it('first N questions: only their judged documents count as judged', () => {
    const { dataset: d, subset } = subsetDataset(dataset, 0, 2);
    expect(d.questions.map((q) => q.id)).toEqual(['q1', 'q2']);
    expect(d.docs.map((x) => x.id)).toEqual(['c', 'e']);
    expect(subset?.judgedDocs).toBe(2);
  });

  it('no subset asked: the same dataset object and subset null', () => {
    const r = subsetDataset(dataset, null, null);
    expect(r.dataset).toBe(dataset);
    expect(r.subset).toBeNull();
  });
});

describe('bench grid', () => {
  it('is the issue grid: 3 chunkings × (4 keyword + 2 models × 4 k × 2 dense modes) = 60 rows', () => {
    const c = benchConfig({ datasetPath: '/nowhere', cacheDir: '/tmp/x' });
    const rows = expandGrid(c);
    expect(rows).toHaveLength(3 * (4 + 2 * 4 * 2));
    expect(new Set(rows.map((r) => r.chunkingKey))).toEqual(new Set(['none', 'cs128-ov16', 'cs256-ov16']));
    expect(c.concurrency).toBe(1);
  });
});

describe('ProviderEmbedding: our provider behind LlamaIndex BaseEmbedding', () => {
  it('documents go through embedBatch with the document role in batches of embedBatchSize; queries with the query role', async () => {
    const p = fakeProvider({ a: [1, 0], b: [0, 1], c: [1, 1], q: [0.5, 0.5] });
    const e = new ProviderEmbedding(p, 2);
    const docs = await e.getTextEmbeddingsBatch(['a', 'b', 'c']);
    expect(docs).toEqual([[1, 0], [0, 1], [1, 1]]);
    const q = await e.getQueryEmbedding({ type: 'text', text: 'q' });
    expect(q).toEqual([0.5, 0.5]);
    expect(p.calls).toEqual([
      { texts: ['a', 'b'], role: 'document' },
      { texts: ['c'], role: 'document' },
      { texts: ['q'], role: 'query' },
    ]);
    expect(e.stats).toMatchObject({ documentTexts: 3, queryTexts: 1 });
  });
});

describe('naive VectorStoreIndex loop', () => {
  const vectors: Record<string, [number, number]> = {
    alpha: [1, 0],
    beta: [0.6, 0.8],
    gamma: [0, 1],
    q1: [1, 0],
    q2: [0, 1],
  };
  const chunks = [chunk('a', 'alpha'), chunk('b', 'beta'), chunk('c', 'gamma')];
  const questions = [question('q1', 'q1', { b: 1 }), question('q2', 'q2', { c: 1 })];

  it('ranks like the harness exact-cosine index and scores like the sweep (worked arithmetic)', async () => {
    const p = fakeProvider(vectors);
    const [k1, k3] = await runNaiveSemantic({ provider: p, label: 'fake', chunkingKey: 'none', chunks, questions, ks: [1, 3] });
    // q1 = [1,0]: cos a = 1, b = 0.6, c = 0; q2 = [0,1]: c = 1, b = 0.8, a = 0
    expect(k3.rankings).toEqual([
      ['a#0', 'b#0', 'c#0'],
      ['c#0', 'b#0', 'a#0'],
    ]);
    const index = buildVectorIndex(chunks.map((c) => c.id), chunks.map((c) => Float32Array.from(vectors[c.text])));
    const harness = questions.map((q) => index.search(Float32Array.from(vectors[q.text]), 3).map((h) => h.id));
    expect(compareRankings(k3.rankings, harness)).toEqual({ sameOrder: 2, sameSet: 0, different: 0 });
    expect(k1.id).toBe('none.semantic.fake.k1');
    // k = 1: q1 gets a (not relevant), q2 gets c (relevant)
    expect(k1.means['hit_rate@1']).toBeCloseTo((0 + 1) / 2, 10);
    // k = 3: q1 finds b at rank 2, q2 finds c at rank 1
    expect(k3.means['mrr@3']).toBeCloseTo((1 / 2 + 1) / 2, 10);
    expect(k3.means['ndcg@3']).toBeCloseTo((1 / Math.log2(3) + 1) / 2, 10);
    // one fresh index per k: every chunk embedded once per configuration, every query once per configuration
    expect(k1.embeddedDocuments).toBe(3);
    expect(k3.embeddedDocuments).toBe(3);
    expect(k1.embeddedQueries).toBe(2);
  });

  it('leaves no global LlamaIndex embedding model behind (Settings.withEmbedModel only)', async () => {
    await runNaiveSemantic({ provider: fakeProvider(vectors), label: 'fake', chunkingKey: 'none', chunks, questions, ks: [1] });
    expect(() => Settings.embedModel).toThrow(/Cannot find Embedding/);
  });

  it('quirk: equal scores keep insertion order in LlamaIndex, the harness puts the larger id first', async () => {
    const tied = [chunk('x', 'alpha'), chunk('y', 'alpha')];
    const [r] = await runNaiveSemantic({
      provider: fakeProvider(vectors),
      label: 'fake',
      chunkingKey: 'none',
      chunks: tied,
      questions: [question('q1', 'q1', { x: 1 })],
      ks: [2],
    });
    expect(r.rankings).toEqual([['x#0', 'y#0']]);
    const index = buildVectorIndex(['x#0', 'y#0'], [Float32Array.from([1, 0]), Float32Array.from([1, 0])]);
    const harness = [index.search(Float32Array.from([1, 0]), 2).map((h) => h.id)];
    expect(harness).toEqual([['y#0', 'x#0']]);
    expect(compareRankings(r.rankings, harness)).toEqual({ sameOrder: 0, sameSet: 1, different: 0 });
  });

  it('quirk: a zero vector scores NaN in LlamaIndex (0/0 cosine); the harness scores it 0', async () => {
    const [r] = await runNaiveSemantic({
      provider: fakeProvider(vectors),
      label: 'fake',
      chunkingKey: 'none',
      chunks: [chunk('a', 'alpha'), chunk('z', 'no known word')],
      questions: [question('q1', 'q1', { a: 1 })],
      ks: [2],
    });
    expect(r.nanScores).toBe(1);
    const index = buildVectorIndex(['a#0', 'z#0'], [Float32Array.from([1, 0]), Float32Array.from([0, 0])]);
    expect(index.search(Float32Array.from([1, 0]), 2)).toEqual([
      { id: 'a#0', score: 1 },
      { id: 'z#0', score: 0 },
    ]);
  });

  it('quirk: LlamaIndex embeds node.getContent(), i.e. the chunk text trimmed', async () => {
    const p = fakeProvider(vectors);
    await runNaiveSemantic({ provider: p, label: 'fake', chunkingKey: 'none', chunks: [chunk('a', ' alpha\n')], questions: [], ks: [1] });
    expect(p.calls.filter((c) => c.role === 'document').flatMap((c) => c.texts)).toEqual(['alpha']);
  });
});

describe('comparison helpers', () => {
  it('compareMeans counts differing values and the largest absolute difference', () => {
    const harness = new Map<string, Record<string, number>>([
      ['c1', { 'ndcg@3': 0.5, 'mrr@3': 0.25 }],
      ['c2', { 'ndcg@3': 0.75 }],
    ]);
    const r = compareMeans(
      [
        { id: 'c1', means: { 'ndcg@3': 0.5, 'mrr@3': 0.25 + 1 / 300 } },
        { id: 'c2', means: { 'ndcg@3': 0.75 } },
        { id: 'c3', means: { 'ndcg@3': 1 } },
      ],
      harness,
    );
    expect(r.configs).toBe(2);
    expect(r.values).toBe(3);
    expect(r.differing).toBe(1);
    expect(r.maxAbsDiff).toBeCloseTo(1 / 300, 10);
    expect(r.missing).toEqual(['c3 (no harness row)']);
  });

  it('compareRankings separates same order, same set in another order, and different chunks', () => {
    expect(
      compareRankings(
        [['a', 'b'], ['a', 'b'], ['a', 'b'], ['a']],
        [['a', 'b'], ['b', 'a'], ['a', 'c'], ['a', 'b']],
      ),
    ).toEqual({ sameOrder: 1, sameSet: 1, different: 2 });
  });
});
