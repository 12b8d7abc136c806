/**
 * `npx tsx bench/bm25-merge-pause.ts CORPUS_FOLDER [SPILL_MB] [ROUNDS]`: what the BM25 build's merge of spilled runs
 * does to the rest of the process (issue 25; docs/scale.md, "1M and 10M in one run, alone (session 15)"). Builds the
 * keyword index over the BEIR corpus's whole documents on 2 worker threads with a spill budget of SPILL_MB (default
 * 256), once with the merge run in one go (`mergePause` 2^40: never pauses, as before session 15) and once with the
 * default pause ({@link MERGE_YIELD_POSTINGS}, or the environment's PAUSE), alternated ROUNDS times (default 2; which goes
 * first alternates too) in one process. A 10 ms interval
 * timer stands for the sweep's other work (worker messages, heartbeats): the longest gap between two of its ticks
 * during each build is how long the thread was held. Prints one JSON line per build: build seconds, runs spilled,
 * postings, the longest timer gap (ms) and the ticks seen; then checks that both builds' rankings of 50 queries agree.
 */
import { performance } from 'node:perf_hooks';
import { loadDataset } from '../src/load/dataset.js';
import { buildKeywordIndexParallel, type KeywordIndex } from '../src/retrieve/bm25.js';
import { MERGE_YIELD_POSTINGS } from '../src/retrieve/bm25-spill.js';
import type { Chunk } from '../src/types.js';

const [folder, spillArg = '256', roundsArg = '2'] = process.argv.slice(2);
const spillMb = Number(spillArg);
const rounds = Number(roundsArg);
if (!folder || !(spillMb > 0) || !(Number.isInteger(rounds) && rounds >= 1)) {
  process.stderr.write('usage: npx tsx bench/bm25-merge-pause.ts CORPUS_FOLDER [SPILL_MB > 0] [ROUNDS >= 1]\n');
  process.exit(2);
}
const dataset = await loadDataset({ path: folder, split: 'test' });
const chunks: Chunk[] = dataset.docs.map((d) => ({ id: d.id, docId: d.id, ordinal: 0, text: d.text, start: 0, end: d.text.length, tokens: 0 }));

async function build(pause: number): Promise<KeywordIndex> {
  let last = performance.now();
  let longest = 0;
  let ticks = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    ticks++;
  }, 10);
  let runs = 0;
  const t0 = performance.now();
  const index = await buildKeywordIndexParallel(chunks, {}, { threads: 2, spillBytes: spillMb * 1024 * 1024, mergePause: pause, onSpill: (r) => (runs = r) });
  const seconds = (performance.now() - t0) / 1000;
  longest = Math.max(longest, performance.now() - last);
  clearInterval(timer);
  const postings = (index as unknown as { postDoc: Int32Array }).postDoc.length;
  process.stdout.write(JSON.stringify({ merge: pause === 2 ** 40 ? 'one go' : `pause ${pause}`, documents: chunks.length, seconds, runs, postings, longest_gap_ms: Math.round(longest), ticks }) + '\n');
  return index;
}

let a: KeywordIndex | undefined;
let b: KeywordIndex | undefined;
// PAUSE in the environment overrides the paused build's postings between turns (a whole number >= 1).
const pause = Number(process.env.PAUSE ?? MERGE_YIELD_POSTINGS);
for (let r = 0; r < rounds; r++) {
  // Alternate which goes first: the second build of a round runs beside the first one's index, still held.
  a = undefined;
  b = undefined;
  if (r % 2 === 0) {
    a = await build(2 ** 40);
    b = await build(pause);
  } else {
    b = await build(pause);
    a = await build(2 ** 40);
  }
}
let differ = 0;
for (const q of dataset.questions.slice(0, 50)) if (JSON.stringify(a!.search(q.text, 100)) !== JSON.stringify(b!.search(q.text, 100))) differ++;
process.stdout.write(JSON.stringify({ queries: Math.min(50, dataset.questions.length), rankings_differ: differ }) + '\n');
