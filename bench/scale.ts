/**
 * `npm run bench:scale -- --out DIR [--sizes 20000,200000,1000000] [--keep] [--corpora-only] [--modes LIST]`: the scale benchmark of issue 12.
 *
 * For each size N it writes a deterministic synthetic BEIR corpus of N documents into DIR/corpus-N/ (never committed):
 * every SciFact document as it is (so SciFact's 300 test questions and qrels still apply), plus N − 5,183 distractor
 * documents, each a title and 4-12 sentences drawn with a seeded generator from the sentences of SciFact and
 * TREC-DL 2019 (../shared/datasets). Then it runs the grid keyword + semantic + hybrid with glove-100d at chunking
 * [none, 256] (overlap 16), k 1, 5, 10, in a child process per size with a fresh cache, and writes DIR/scale.json:
 * per-stage seconds (load, chunk, keyword, dense = embedding + search + fusion, score, total), peak RSS of the child
 * (`process.resourceUsage().maxRSS`), chunks per chunking, and the growth exponent between consecutive sizes,
 * log(t2/t1) / log(N2/N1), per stage (1 = linear).
 *
 * Then, on the same corpus (whole documents, depth 100), BM25 queries/s of our index (all 300 test queries) beside raw
 * wink-bm25-text-search and minisearch (the first `--bm25-peer-queries` of them, default 30: at 200k documents wink
 * answers about 1 query/s and minisearch less, so 300 would add an hour), through bench/bm25.ts: one child process
 * per engine, one warm-up pass and one timed pass. `--bm25 LIST` chooses the engines (default `ours,wink,minisearch`
 * up to 300k documents and none above, where the peers' builds alone take tens of minutes; `none` skips).
 */
import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { Command } from 'commander';
import { seededRandom } from '../src/score/stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..');
const shared = path.resolve(repo, '../shared/datasets');

function sentencesOf(file: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const d = JSON.parse(line) as { text?: string };
    for (const s of (d.text ?? '').split(/(?<=[.!?])\s+/)) if (s.length > 20) out.push(s);
  }
  return out;
}

/** Writes DIR/corpus-N (BEIR layout) and returns its folder. */
async function buildCorpus(dir: string, n: number): Promise<string> {
  const folder = path.join(dir, `corpus-${n}`);
  if (existsSync(path.join(folder, 'corpus.jsonl'))) return folder;
  mkdirSync(path.join(folder, 'qrels'), { recursive: true });
  const scifact = path.join(shared, 'scifact');
  copyFileSync(path.join(scifact, 'queries.jsonl'), path.join(folder, 'queries.jsonl'));
  copyFileSync(path.join(scifact, 'qrels/test.tsv'), path.join(folder, 'qrels/test.tsv'));
  const sentences = [...sentencesOf(path.join(scifact, 'corpus.jsonl')), ...sentencesOf(path.join(shared, 'trec-dl-2019-5k/corpus.jsonl'))];
  const out = createWriteStream(path.join(folder, 'corpus.jsonl'));
  const write = async (s: string) => {
    if (!out.write(s)) await once(out, 'drain');
  };
  let kept = 0;
  for (const line of readFileSync(path.join(scifact, 'corpus.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    await write(line + '\n');
    kept++;
  }
  const r = seededRandom(20261202 + n);
  for (let i = kept; i < n; i++) {
    const m = 4 + Math.floor(r() * 9);
    const parts: string[] = [];
    for (let j = 0; j < m; j++) parts.push(sentences[Math.floor(r() * sentences.length)]);
    await write(JSON.stringify({ _id: `syn${i}`, title: parts[0].slice(0, 60), text: parts.slice(1).join(' ') }) + '\n');
  }
  out.end();
  await once(out, 'finish');
  return folder;
}

interface SizeResult {
  documents: number;
  seconds: Record<string, number>;
  peak_rss_mb: number;
  chunks: Record<string, number>;
  rows: number;
  ndcg10_keyword_none: number | null;
  /** Per keyword and semantic unit: build seconds and the questions' total query seconds. */
  units?: { unit: string; build_seconds: number; query_seconds: number }[];
  /** Peak RSS so far (MB) when each stage event was emitted, with the seconds since the sweep started. */
  peak_rss_at_stage_start?: { stage: string; seconds: number; peak_rss_mb: number }[];
  /** bench/bm25.ts on this corpus: per engine, queries/s (depth 100), build seconds, index MB, peak RSS MB. */
  bm25?: { engine: string; queries: number; queries_per_second: number; build_seconds: number; index_mb: number; peak_rss_mb: number }[];
}

/** The child: one sweep, printing one JSON line with its timings and peak RSS. */
async function child(dataset: string, cacheDir: string, modes: string[]): Promise<void> {
  const { parseConfig } = await import('../src/config/schema.js');
  const { runSweep } = await import('../src/run/sweep.js');
  const config = parseConfig({
    name: 'scale',
    dataset: { path: dataset, split: 'test' },
    chunking: { sizes: ['none', 256], overlap: 16 },
    topK: [1, 5, 10],
    modes,
    embeddings: ['glove-100d'],
    primaryMetric: 'ndcg@10',
    cacheDir,
  });
  const t0 = performance.now();
  // The process's peak RSS so far, read as each stage starts: tells in which stage the peak was reached.
  const peakAtStage: { stage: string; seconds: number; peak_rss_mb: number }[] = [];
  const progressSeen = new Set<string>();
  const { result, timings } = await runSweep(config, {
    resume: false,
    onEvent: (e) => {
      const seconds = (performance.now() - t0) / 1000;
      const mark = (stage: string) =>
        peakAtStage.push({ stage, seconds: Math.round(seconds), peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024) });
      if (e.kind === 'progress' && !progressSeen.has(e.stage)) {
        progressSeen.add(e.stage);
        mark(e.stage);
      }
      if (e.kind !== 'stage') return;
      mark(`${e.stage} ${e.detail ?? ''}`.trim());
      process.stderr.write(`[${seconds.toFixed(0)} s] ${e.stage} ${e.detail ?? ''}\n`);
    },
  });
  peakAtStage.push({ stage: 'end', seconds: Math.round((performance.now() - t0) / 1000), peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024) });
  const chunkings = (result.manifest.chunking as { chunkings: { key: string; chunks: number }[] }).chunkings;
  const kw = result.configs.find((c) => c.config.id === 'none.keyword.k10');
  // Per ranking unit (one row at k 10 stands for it): index build seconds and the 300 queries' seconds.
  const units = result.configs
    .filter((c) => c.config.id.endsWith('.k10') && !c.config.id.includes('.hybrid'))
    .map((c) => ({ unit: c.config.id.slice(0, -'.k10'.length), build_seconds: c.buildSeconds, query_seconds: (c.meanQueryMs * c.questions) / 1000 }));
  const out: SizeResult = {
    documents: (result.manifest.dataset as { docs: number }).docs,
    seconds: timings,
    peak_rss_mb: process.resourceUsage().maxRSS / 1024,
    chunks: Object.fromEntries(chunkings.map((c) => [c.key, c.chunks])),
    rows: result.configs.length,
    ndcg10_keyword_none: kw?.means['ndcg@10'] ?? null,
    peak_rss_at_stage_start: peakAtStage,
    units,
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}

async function main(): Promise<void> {
  const program = new Command()
    .name('bench:scale')
    .option('--out <dir>', 'work folder for corpora, caches and scale.json', '.cache/bench-scale')
    .option('--sizes <list>', 'document counts, comma separated', '20000,200000,1000000')
    .option('--keep', 'keep the synthetic corpora and caches afterwards')
    .option('--bm25 <engines>', 'BM25 engines to time on each corpus (ours,wink,minisearch; none to skip)')
    .option('--bm25-peer-queries <n>', 'queries timed for wink and minisearch (ours gets all)', '30')
    .option('--corpora-only', 'write the synthetic corpora (DIR/corpus-N) and stop')
    .option('--modes <list>', 'modes of the grid (a subset, for diagnosis)', 'keyword,semantic,hybrid')
    .option('--child <dataset>', '(internal) run one sweep on this dataset folder')
    .option('--cache <dir>', '(internal) the child\'s cache folder');
  program.parse();
  const o = program.opts<{ out: string; sizes: string; keep?: boolean; corporaOnly?: boolean; modes: string; bm25?: string; bm25PeerQueries: string; child?: string; cache?: string }>();
  if (o.child) return child(o.child, o.cache!, o.modes.split(','));
  if (!existsSync(path.join(shared, 'scifact/corpus.jsonl'))) {
    process.stderr.write(`bench:scale: SciFact not found under ${shared}; nothing measured\n`);
    process.exitCode = 1;
    return;
  }
  const dir = path.resolve(o.out);
  mkdirSync(dir, { recursive: true });
  const sizes = o.sizes.split(',').map(Number);
  const results: SizeResult[] = [];
  for (const n of sizes) {
    const t = performance.now();
    const folder = await buildCorpus(dir, n);
    process.stderr.write(`corpus of ${n} documents ready in ${((performance.now() - t) / 1000).toFixed(1)} s: ${folder}\n`);
    if (o.corporaOnly) continue;
    const cache = path.join(dir, `cache-${n}`);
    rmSync(cache, { recursive: true, force: true });
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--max-old-space-size=16384', fileURLToPath(import.meta.url), '--child', folder, '--cache', cache, '--modes', o.modes], {
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    });
    if (r.status !== 0) throw new Error(`the sweep on ${n} documents failed (exit ${r.status})`);
    const line = r.stdout.trim().split('\n').pop()!;
    const sized = JSON.parse(line) as SizeResult;
    process.stderr.write(`${n}: ${line}\n`);
    const engines = (o.bm25 ?? (n > 300_000 ? 'none' : 'ours,wink,minisearch')).split(',').filter((e) => e !== 'none');
    sized.bm25 = [];
    for (const engine of engines) {
      const file = path.join(dir, `bm25-${n}-${engine}.json`);
      const queries = engine === 'ours' ? [] : ['--queries', o.bm25PeerQueries];
      const b = spawnSync(
        process.execPath,
        ['--import', 'tsx', path.join(here, 'bm25.ts'), '--corpora', `dir:${folder}`, '--engines', engine, '--repeat', '1', ...queries, '--out', file],
        { stdio: ['ignore', 'ignore', 'inherit'], cwd: repo },
      );
      if (b.status !== 0) throw new Error(`bench:bm25 ${engine} on ${n} documents failed (exit ${b.status})`);
      for (const x of JSON.parse(readFileSync(file, 'utf8')) as (NonNullable<SizeResult['bm25']>[number] & { queries: number })[])
        sized.bm25.push({
          engine: x.engine,
          queries: x.queries,
          queries_per_second: x.queries_per_second,
          build_seconds: x.build_seconds,
          index_mb: x.index_mb,
          peak_rss_mb: x.peak_rss_mb,
        });
    }
    results.push(sized);
    if (!o.keep) rmSync(cache, { recursive: true, force: true });
  }
  if (o.corporaOnly) return;
  const growth: Record<string, Record<string, number>> = {};
  for (let i = 1; i < results.length; i++) {
    const a = results[i - 1];
    const b = results[i];
    const key = `${a.documents}->${b.documents}`;
    growth[key] = {};
    for (const stage of Object.keys(b.seconds))
      if (a.seconds[stage] > 0 && b.seconds[stage] > 0) growth[key][stage] = Math.log(b.seconds[stage] / a.seconds[stage]) / Math.log(b.documents / a.documents);
  }
  const report = { createdAt: new Date().toISOString(), node: process.version, sizes: results, growth_exponent: growth };
  writeFileSync(path.join(dir, 'scale.json'), JSON.stringify(report, null, 2) + '\n');
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
}

await main();
