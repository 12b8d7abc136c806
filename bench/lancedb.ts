/**
 * `npx tsx bench/lancedb.ts [--dataset ../shared/datasets/scifact] [--cache .cache/test-embed] [--depth 10]`:
 * LanceDB against the in-memory exact semantic retriever on a BEIR dataset (whole documents, glove-100d), side by side
 * in one run. Prints JSON to stdout: for the in-memory index, LanceDB flat and IVF-PQ (several nprobes, with and
 * without refinement): build seconds, ms per query (300 questions, one searchBatch), nDCG@10 / recall@10 / MRR@10, and
 * for LanceDB flat the rankings identical to the in-memory ones and the max |score difference| at equal positions;
 * for IVF-PQ the mean ann_recall@depth against LanceDB flat; and our BM25 beside LanceDB's full-text search. Embedding is done once up front and not counted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { embedTexts } from '../src/embed/embed-texts.js';
import { createProvider } from '../src/embed/registry.js';
import { resolveEmbeddingSpec } from '../src/embed/spec.js';
import { loadBeir } from '../src/load/beir.js';
import { keywordRetriever, semanticRetriever, type Embedder } from '../src/retrieve/builtin.js';
import { annRecall, lancedbKeywordRetriever, lancedbRetriever, type LancedbIndexSetting } from '../src/retrieve/lancedb.js';
import { rankByRule } from '../src/retrieve/rank.js';
import type { RetrieverContext, RetrieverFactory } from '../src/retrieve/retriever.js';
import { evaluate } from '../src/score/evaluate.js';
import { parseMeasure } from '../src/score/measures.js';
import type { Chunk, Hit } from '../src/types.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const opts = new Command()
  .option('--dataset <dir>', 'BEIR folder', path.resolve(repo, '../shared/datasets/scifact'))
  .option('--cache <dir>', 'cache folder of the glove table', path.join(repo, '.cache', 'test-embed'))
  .option('--depth <k>', 'hits per question', '10')
  .parse()
  .opts<{ dataset: string; cache: string; depth: string }>();
const depth = Number(opts.depth);

const { docs, questions: qs } = await loadBeir(opts.dataset, 'test');
const provider = await createProvider(resolveEmbeddingSpec('glove-100d'), { cacheDir: opts.cache });
const memo = new Map<string, Float32Array>();
const embed: Embedder = async (texts, role) => {
  const missing = [...new Set(texts.filter((t) => !memo.has(`${role}\0${t}`)))];
  if (missing.length > 0) {
    const { vectors } = await embedTexts(provider, missing, role);
    missing.forEach((t, i) => memo.set(`${role}\0${t}`, vectors[i]));
  }
  return texts.map((t) => memo.get(`${role}\0${t}`)!);
};
const chunks: Chunk[] = docs.map((d) => ({ id: `${d.id}#0`, docId: d.id, ordinal: 0, text: d.text, start: 0, end: d.text.length, tokens: 0 }));
const questions = qs.map((q) => ({ id: q.id, text: q.text }));
const t0 = performance.now();
await embed(
  chunks.map((c) => c.text),
  'document',
);
await embed(
  questions.map((q) => q.text),
  'query',
);
const embedSeconds = (performance.now() - t0) / 1000;

const dir = mkdtempSync(path.join(tmpdir(), 'rs-bench-lancedb-'));
const ctx: RetrieverContext = {
  documents: docs,
  chunks,
  chunking: { size: null, overlap: 0 },
  chunkingKey: 'none',
  options: {},
  signal: new AbortController().signal,
  cacheDir: dir,
};
const qrels = Object.fromEntries(qs.map((q) => [q.id, q.relevant]));
const measures = ['ndcg@10', 'recall@10', 'mrr@10'].map(parseMeasure);

async function measure(factory: RetrieverFactory): Promise<{ lists: Hit[][]; buildSeconds: number; msPerQuery: number; mean: Record<string, number>; describe: unknown }> {
  const b = performance.now();
  const r = await factory(ctx);
  const buildSeconds = (performance.now() - b) / 1000;
  const s = performance.now();
  const raw = r.searchBatch
    ? await r.searchBatch(questions, depth, ctx.signal)
    : await Promise.all(questions.map(async (q) => r.search(q, depth, ctx.signal)));
  const msPerQuery = (performance.now() - s) / questions.length;
  const lists = raw.map((l) => rankByRule(l, depth));
  const run = Object.fromEntries(questions.map((q, i) => [q.id, lists[i].map((h) => ({ docno: h.id.replace(/#0$/, ''), score: h.score }))]));
  const describe = r.describe?.();
  await r.close?.();
  return { lists, buildSeconds, msPerQuery, mean: evaluate(qrels, run, measures).mean, describe };
}

const memory = await measure(semanticRetriever({ embed }));
const flat = await measure(lancedbRetriever({ embed, modelKey: 'glove-100d' }));
const flatReused = await measure(lancedbRetriever({ embed, modelKey: 'glove-100d' }));
let identical = 0;
let maxScoreDiff = 0;
const differing: string[] = [];
for (let i = 0; i < questions.length; i++) {
  const a = memory.lists[i];
  const b = flat.lists[i];
  if (a.map((h) => h.id).join() === b.map((h) => h.id).join()) identical++;
  else differing.push(questions[i].id);
  for (let j = 0; j < Math.min(a.length, b.length); j++) maxScoreDiff = Math.max(maxScoreDiff, Math.abs(a[j].score - b[j].score));
}
const ivf: unknown[] = [];
for (const setting of [
  { nprobes: 1 },
  { nprobes: 5 },
  { nprobes: 10 },
  { nprobes: 20 },
  { nprobes: 20, refineFactor: 10 },
  { nprobes: 72 },
  { nprobes: 72, refineFactor: 10 },
  { subVectors: 20, nprobes: 20 },
  { subVectors: 50, nprobes: 20 },
]) {
  const index: LancedbIndexSetting = { type: 'ivf_pq', ...setting };
  const m = await measure(lancedbRetriever({ embed, modelKey: 'glove-100d', index }));
  const rec = annRecall(flat.lists, m.lists, depth);
  ivf.push({
    setting,
    index: (m.describe as { index: unknown }).index,
    buildSeconds: m.buildSeconds,
    msPerQuery: m.msPerQuery,
    [`ann_recall@${depth}`]: rec.reduce((s, x) => s + x, 0) / rec.length,
    mean: m.mean,
  });
}
const keywordOurs = await measure(keywordRetriever());
const keywordLance = await measure(lancedbKeywordRetriever());
await provider.close?.();
rmSync(dir, { recursive: true, force: true });
const pick = (m: typeof memory) => ({ buildSeconds: m.buildSeconds, msPerQuery: m.msPerQuery, mean: m.mean });
process.stdout.write(
  `${JSON.stringify(
    {
      dataset: opts.dataset,
      documents: chunks.length,
      questions: questions.length,
      depth,
      embedSeconds,
      memory: pick(memory),
      lancedbFlat: { ...pick(flat), reopenSeconds: flatReused.buildSeconds, identicalRankings: identical, differing, maxScoreDiff },
      ivfPq: ivf,
      keyword: { ours: pick(keywordOurs), lancedbFts: pick(keywordLance) },
    },
    null,
    2,
  )}\n`,
);
