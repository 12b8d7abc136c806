/**
 * Document ids past 2^24 (issue 25): `IdIndex` (src/id-index.ts) against the `Map` it replaced in the loaders and the
 * sweep, side by side in one process.
 *
 *   node --expose-gc --max-old-space-size=12288 --import tsx bench/id-index.ts [--compare 10000000] [--past 17825792] [--load DIR]
 *
 * 1. `--compare N`: N ids `d0000000`…; a `Map` id → i and `IdIndex.over` built alternately (three rounds each, the
 *    median), then every id looked up and N absent ids; seconds and the memory each adds (heap + array buffers after
 *    two collections).
 * 2. `--past M` (default 2^24 + 2^20): builds both over M ids; the `Map` is expected to stop at 2^24 with V8's
 *    RangeError, the `IdIndex` to hold all M (every id looked up again).
 * 3. `--load DIR`: writes a BEIR folder of M one-word documents to DIR (removed at the end), loads it with `loadBeir`
 *    (texts in a text store, as the sweep does past its share) and checks the count, the first and the last id.
 */
import { mkdirSync, rmSync, createWriteStream, writeFileSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { Command } from 'commander';
import { IdIndex } from '../src/id-index.js';
import { loadBeir } from '../src/load/beir.js';

const o = new Command()
  .option('--compare <n>', 'ids for the side-by-side timing', '10000000')
  .option('--past <n>', 'ids for the past-2^24 check', String(2 ** 24 + 2 ** 20))
  .option('--load <dir>', 'also load a BEIR corpus of --past documents written to this folder')
  .parse()
  .opts<{ compare: string; past: string; load?: string }>();
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const mem = (): number => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const idOf = (i: number): string => `d${String(i).padStart(8, '0')}`;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const MB = 1024 * 1024;

function compare(n: number): void {
  const ids = Array.from({ length: n }, (_, i) => idOf(i));
  const absent = Array.from({ length: n }, (_, i) => `x${i}`);
  const times = { map: [] as number[], table: [] as number[] };
  const lookups = { map: [] as number[], table: [] as number[] };
  const bytes = { map: 0, table: 0 };
  for (let round = 0; round < 3; round++) {
    for (const kind of round % 2 === 0 ? (['map', 'table'] as const) : (['table', 'map'] as const)) {
      const before = mem();
      let t = performance.now();
      const index = kind === 'map' ? new Map(ids.map((id, i) => [id, i])) : IdIndex.over(n, (i) => ids[i]);
      times[kind].push((performance.now() - t) / 1000);
      bytes[kind] = mem() - before;
      t = performance.now();
      let found = 0;
      for (let i = 0; i < n; i++) if (index.get(ids[i]) === i) found++;
      for (let i = 0; i < n; i++) if (index.get(absent[i]) !== undefined) found = -Infinity;
      lookups[kind].push((performance.now() - t) / 1000);
      if (found !== n) throw new Error(`${kind}: ${found} of ${n} ids found`);
    }
  }
  console.log(`${n} ids, median of 3 (alternated): build Map ${median(times.map).toFixed(2)} s, IdIndex ${median(times.table).toFixed(2)} s (${(median(times.table) / median(times.map)).toFixed(2)}x)`);
  console.log(`  ${2 * n} lookups (half absent): Map ${median(lookups.map).toFixed(2)} s, IdIndex ${median(lookups.table).toFixed(2)} s (${(median(lookups.table) / median(lookups.map)).toFixed(2)}x)`);
  console.log(`  memory added: Map ${(bytes.map / MB).toFixed(0)} MB, IdIndex ${(bytes.table / MB).toFixed(0)} MB`);
}

function past(m: number): void {
  const ids = Array.from({ length: m }, (_, i) => idOf(i));
  const map = new Map<string, number>();
  try {
    for (let i = 0; i < m; i++) map.set(ids[i], i);
    console.log(`Map: held all ${m} ids`);
  } catch (e) {
    console.log(`Map: ${(e as Error).name} "${(e as Error).message}" after ${map.size} ids (2^24 = ${2 ** 24})`);
  }
  map.clear();
  const t = performance.now();
  const index = IdIndex.over(m, (i) => ids[i]);
  let found = 0;
  for (let i = 0; i < m; i++) if (index.get(ids[i]) === i) found++;
  console.log(`IdIndex: ${index.size} ids held, ${found} found again, ${((performance.now() - t) / 1000).toFixed(2)} s`);
  if (found !== m) throw new Error('IdIndex lost ids');
}

async function load(dir: string, m: number): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.join(dir, 'qrels'), { recursive: true });
  const out = createWriteStream(path.join(dir, 'corpus.jsonl'));
  for (let i = 0; i < m; i++) if (!out.write(`{"_id":"${idOf(i)}","text":"w${i % 1000}"}\n`)) await once(out, 'drain');
  out.end();
  await once(out, 'finish');
  writeFileSync(path.join(dir, 'queries.jsonl'), '{"_id":"q1","text":"w1"}\n');
  writeFileSync(path.join(dir, 'qrels', 'test.tsv'), `query-id\tcorpus-id\tscore\nq1\t${idOf(m - 1)}\t1\n`);
  const t = performance.now();
  const r = await loadBeir(dir, 'test', { textStore: { dir: path.join(dir, 'texts'), residentBytes: 0 } });
  const s = (performance.now() - t) / 1000;
  const ok = r.docs.length === m && r.docs[0].id === idOf(0) && r.docs[m - 1].id === idOf(m - 1) && r.questions[0].relevant[idOf(m - 1)] === 1;
  console.log(`loadBeir: ${r.docs.length} documents (2^24 = ${2 ** 24}) in ${s.toFixed(1)} s; first ${r.docs[0].id}, last ${r.docs[m - 1].id}; ${ok ? 'as written' : 'NOT as written'}`);
  rmSync(dir, { recursive: true, force: true });
  if (!ok) process.exitCode = 1;
}

compare(Number(o.compare));
past(Number(o.past));
if (o.load !== undefined) await load(o.load, Number(o.past));
