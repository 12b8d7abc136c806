/**
 * `npx tsx bench/rerank.ts [--model DIR] [--depth 20,50] [--questions N] [--max-length N] [--reps N]`: the rerank
 * stage on SciFact (../shared/datasets/scifact), BM25 lists over whole abstracts. Prints one JSON object on stdout.
 *
 * Measures, in one process and one run:
 * 1. pair encoding side by side: the reference `encodePair` (transformers.js pair call + chunk tokenised again to
 *    locate it) against `encodePairFast` (each chunk tokenised once), over the same pairs, interleaved `--reps`
 *    times; ms per pair for each, and whether every pair came out equal;
 * 2. `rerankLists` per depth, cold (empty SQLite cache) then warm (same cache): wall seconds, pairs scored,
 *    cache hits; depths run in the order given, so a deeper depth reuses the shallower one's pairs;
 * 3. `measureRerankLatency` per depth (8 questions, afresh, one at a time).
 *
 * Without `--model` it builds the tiny cross-encoder of the tests (its forward pass is trivial, so the figures are
 * the harness's own cost: tokenisation, padding, cache); with `--model DIR` it uses a real cross-encoder folder
 * (e.g. models/ms-marco-MiniLM-L-6-v2, see docs/reranking.md).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildTinyCrossEncoder } from '../scripts/build-tiny-model.js';
import { measureRerankLatency, rerankLists } from '../src/rerank/apply.js';
import { RerankCache } from '../src/rerank/cache.js';
import { createReranker } from '../src/rerank/registry.js';
import { resolveRerankSpec } from '../src/rerank/spec.js';
import { encodePair, encodePairFast, questionTokensOf, type PairTokenizer } from '../src/rerank/transformers.js';
import { buildKeywordIndex } from '../src/retrieve/bm25.js';
import type { Chunk } from '../src/types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const data = path.resolve(here, '..', '..', 'shared', 'datasets', 'scifact');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const depths = (arg('depth') ?? '20,50').split(',').map(Number);
const nQuestions = Number(arg('questions') ?? 300);
const maxLength = Number(arg('max-length') ?? 512);
const reps = Number(arg('reps') ?? 3);
if (!existsSync(data)) throw new Error(`SciFact not found at ${data}`);

const readJsonl = (f: string): Record<string, string>[] =>
  readFileSync(path.join(data, f), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, string>);
const judged = new Set(readFileSync(path.join(data, 'qrels', 'test.tsv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split('\t')[0]));
const questions = readJsonl('queries.jsonl')
  .filter((q) => judged.has(q._id))
  .slice(0, nQuestions)
  .map((q) => ({ id: q._id, text: q.text }));
const chunks: Chunk[] = readJsonl('corpus.jsonl').map((d) => {
  const text = `${d.title} ${d.text}`;
  return { id: `${d._id}#0`, docId: d._id, ordinal: 0, text, start: 0, end: text.length, tokens: 0 };
});
const textById = new Map(chunks.map((c) => [c.id, c.text]));
const textOf = (id: string): string => textById.get(id)!;
const index = buildKeywordIndex(chunks);
const lists = questions.map((q) => index.search(q.text, Math.max(...depths)));

const work = mkdtempSync(path.join(os.tmpdir(), 'rs-bench-rerank-'));
try {
  const modelDir = arg('model') ? path.resolve(arg('model')!) : (await buildTinyCrossEncoder(path.join(work, 'tiny-ce'))).dir;
  const spec = resolveRerankSpec({ model: `transformers:${modelDir}`, depth: depths, maxLength })!;
  const reranker = await createReranker(spec, { cacheDir: work });
  const describe = reranker.describe();

  // 1. Pair encoding, side by side on the same pairs.
  const tf = (await import('@huggingface/transformers')) as unknown as {
    AutoTokenizer: { from_pretrained(id: string, o: Record<string, unknown>): Promise<PairTokenizer> };
  };
  const tokenizer = await tf.AutoTokenizer.from_pretrained(modelDir, { local_files_only: true });
  const effMax = (describe.maxLength as number | null) ?? null;
  const sample = questions.slice(0, 50).flatMap((q, i) => lists[i].slice(0, 20).map((h) => [q.text, textOf(h.id)] as const));
  const times = { reference: [] as number[], fast: [] as number[] };
  let equal = true;
  for (let r = 0; r < reps; r++) {
    let t = performance.now();
    const ref = sample.map(([q, c]) => encodePair(tokenizer, q, c, effMax));
    times.reference.push((performance.now() - t) / sample.length);
    t = performance.now();
    const memo = new Map<string, string[]>();
    const fast = sample.map(([q, c]) => {
      let qt = memo.get(q);
      if (!qt) memo.set(q, (qt = questionTokensOf(tokenizer, q)));
      return encodePairFast(tokenizer, qt, c, effMax);
    });
    times.fast.push((performance.now() - t) / sample.length);
    equal &&= JSON.stringify(ref) === JSON.stringify(fast);
  }

  // 2 and 3. The stage, cold then warm, per depth; latency per depth.
  const cacheFile = path.join(work, 'rerank.sqlite');
  const stage: Record<string, unknown>[] = [];
  for (const depth of depths) {
    for (const pass of ['cold', 'warm']) {
      const cache = RerankCache.open(cacheFile);
      const t0 = performance.now();
      const out = await rerankLists(reranker, questions, lists, depth, textOf, { cache });
      stage.push({ depth, pass, wallSeconds: (performance.now() - t0) / 1000, ...out.stats });
      cache.close();
    }
    stage.push({ depth, latency: await measureRerankLatency(reranker, questions, lists, depth, textOf) });
  }
  await reranker.close();
  const mean = (a: number[]): number => a.reduce((s, x) => s + x, 0) / a.length;
  process.stdout.write(
    JSON.stringify(
      {
        model: describe.model,
        maxLength: effMax,
        questions: questions.length,
        cpus: os.cpus().length,
        loadAverage: os.loadavg(),
        pairEncoding: {
          pairs: sample.length,
          reps,
          referenceMsPerPair: times.reference,
          fastMsPerPair: times.fast,
          speedup: mean(times.reference) / mean(times.fast),
          identical: equal,
        },
        stage,
      },
      null,
      2,
    ) + '\n',
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
