/**
 * `NODE_OPTIONS=--expose-gc npx tsx bench/bm25-postings-file.ts CORPUS_FOLDER [ROUNDS] [SPILL_MB]`: what keeping the
 * BM25 postings in a file costs (issue 25 item 1; ARCHITECTURE decision 60). Builds the keyword index over the BEIR
 * corpus's whole documents on 2 worker threads with a spill budget of SPILL_MB (default 256, so both builds spill as
 * the sweep's do at 1M and more): once with its postings in a file (`residentPostingsBytes` 1) and once resident,
 * in that order (FIRST=resident in the environment: the other way round), each timed with the memory it added (ArrayBuffers and RSS after a garbage collection). Then runs
 * every question of the folder at depth 100 through both, alternated ROUNDS times (default 3; which goes first
 * alternates), and prints one JSON line per pass (queries/s) and a last line with the medians, their ratio and the
 * number of questions whose rankings and scores are identical.
 */
import { performance } from 'node:perf_hooks';
import { loadDataset } from '../src/load/dataset.js';
import { buildKeywordIndexParallel, type KeywordIndex } from '../src/retrieve/bm25.js';
import type { Chunk, Hit } from '../src/types.js';

const [folder, roundsArg = '3', spillArg = '256'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const spillMb = Number(spillArg);
if (!folder || !(Number.isInteger(rounds) && rounds >= 1) || !(spillMb > 0)) {
  process.stderr.write('usage: NODE_OPTIONS=--expose-gc npx tsx bench/bm25-postings-file.ts CORPUS_FOLDER [ROUNDS >= 1] [SPILL_MB > 0]\n');
  process.exit(2);
}
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const dataset = await loadDataset({ path: folder, split: 'test' });
const chunks: Chunk[] = dataset.docs.map((d) => ({ id: d.id, docId: d.id, ordinal: 0, text: d.text, start: 0, end: d.text.length, tokens: 0 }));
const queries = dataset.questions.map((q) => q.text);
const MB = 1024 * 1024;

async function build(mode: 'file' | 'resident'): Promise<KeywordIndex> {
  gc();
  const before = process.memoryUsage();
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 10);
  const t0 = performance.now();
  const index = await buildKeywordIndexParallel(chunks, {}, {
    threads: 2,
    spillBytes: spillMb * MB,
    residentPostingsBytes: mode === 'file' ? 1 : Infinity,
  });
  const seconds = (performance.now() - t0) / 1000;
  longest = Math.max(longest, performance.now() - last);
  clearInterval(timer);
  // ArrayBuffers dropped by the build are freed over a few collections and turns of the loop (one gc() alone left
  // 190 MB of the 1M build's forward lists counted).
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const after = process.memoryUsage();
  process.stdout.write(
    JSON.stringify({
      build: mode,
      documents: chunks.length,
      seconds: +seconds.toFixed(2),
      postings_file_mb: +((index.postingsFileBytes ?? 0) / MB).toFixed(1),
      added_array_buffers_mb: +((after.arrayBuffers - before.arrayBuffers) / MB).toFixed(1),
      added_rss_mb: +((after.rss - before.rss) / MB).toFixed(1),
      longest_gap_ms: Math.round(longest),
    }) + '\n',
  );
  return index;
}

// FIRST=resident in the environment builds the resident index first (the first build also pays the workers' start).
const residentFirst = process.env.FIRST === 'resident';
const first = await build(residentFirst ? 'resident' : 'file');
const second = await build(residentFirst ? 'file' : 'resident');
const [filed, resident] = residentFirst ? [second, first] : [first, second];
const qps: Record<string, number[]> = { file: [], resident: [] };
let lists: Record<string, Hit[][]> = {};
for (let r = 0; r < rounds; r++) {
  const order: ['file' | 'resident', KeywordIndex][] = r % 2 === 0 ? [['file', filed], ['resident', resident]] : [['resident', resident], ['file', filed]];
  for (const [mode, index] of order) {
    const t0 = performance.now();
    const got = index.searchBatch(queries, 100);
    const s = (performance.now() - t0) / 1000;
    qps[mode].push(queries.length / s);
    lists[mode] = got;
    process.stdout.write(JSON.stringify({ round: r, search: mode, queries: queries.length, seconds: +s.toFixed(3), queries_per_second: +(queries.length / s).toFixed(1) }) + '\n');
  }
}
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const same = (a: Hit[], b: Hit[]): boolean => a.length === b.length && a.every((h, j) => h.id === b[j].id && Object.is(h.score, b[j].score));
const identical = queries.filter((_, i) => same(lists.file[i], lists.resident[i])).length;
const mf = median(qps.file);
const mr = median(qps.resident);
process.stdout.write(JSON.stringify({ median_qps_file: +mf.toFixed(1), median_qps_resident: +mr.toFixed(1), ratio_file_over_resident: +(mf / mr).toFixed(3), identical_rankings: identical, queries: queries.length }) + '\n');
filed.close?.();
lists = {};
