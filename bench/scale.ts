/**
 * `npm run bench:scale -- --out DIR [--sizes 20000,200000,1000000] [--keep] [--corpora-only] [--modes LIST] [--stall-seconds S] [--progress]
 *   [--sentences MIN-MAX] [--drop-caches]`:
 * the scale benchmark of issue 12. `--stall-seconds` sets the grid's `limits.stallSeconds` (default 300); scale.json's
 * `failed_rows` lists rows that failed (a stalled unit) with their errors.
 *
 * For each size N it writes a deterministic synthetic BEIR corpus of N documents into DIR/corpus-N/ (never committed):
 * every SciFact document as it is (so SciFact's 300 test questions and qrels still apply), plus N − 5,183 distractor
 * documents, each a title and 4-12 sentences drawn with a seeded generator from the sentences of SciFact and
 * TREC-DL 2019 (../shared/datasets) (`--sentences 1-1`: one sentence each, in DIR/corpus-N-s1-1). Then it runs the grid keyword + semantic + hybrid with glove-100d at chunking
 * [none, 256] (overlap 16), k 1, 5, 10, in a child process per size with a fresh cache, and writes DIR/scale.json:
 * per-stage seconds (load, chunk, keyword, dense = embedding + search + fusion, score, total), peak RSS of the child
 * (`process.resourceUsage().maxRSS`), chunks per chunking, and the growth exponent between consecutive sizes,
 * log(t2/t1) / log(N2/N1), per stage (1 = linear). scale.json is written after every size (`complete: false` until the
 * last), so a run stopped during a later size keeps the earlier ones. `--progress` also prints each stage's counted
 * progress (chunks cut, texts embedded), at most a line per stage every 30 s: a 10M run's timeline. `--drop-caches`
 * (root) empties the kernel's page cache before each size's sweep, so every size's load reads its corpus from the disk
 * (otherwise a 1M corpus written or read minutes before comes from memory and a 10M one, larger than the cache, does not).
 *
 * Then, on the same corpus (whole documents, depth 100), BM25 queries/s of our index (all 300 test queries) beside raw
 * wink-bm25-text-search and minisearch (the first `--bm25-peer-queries` of them, default 30: at 200k documents wink
 * answers about 1 query/s and minisearch less, so 300 would add an hour), through bench/bm25.ts: one child process
 * per engine, one warm-up pass and one timed pass. `--bm25 LIST` chooses the engines (default `ours,wink,minisearch`
 * up to 300k documents and none above, where the peers' builds alone take tens of minutes; `none` skips).
 *
 * `--engines LIST` (issue 26) instead times the keyword and semantic engines one by one, each in its own child sweep
 * with a fresh cache (so a peak RSS belongs to one engine; the glove-100d binary table is shared): whole documents,
 * k = 10, glove-100d, SciFact's 300 test questions. Engines: `bm25` and `lancedb-fts` (keyword rows), `memory` (exact
 * in-memory), `lancedb` (exact through LanceDB) and `lancedb-ivfpq` (two rows on one IVF-PQ index: LanceDB's default
 * parameters, and the same with refineFactor 10; ann_recall@10 against exact lists the sweep computes for it). Per row:
 * build seconds (semantic: embedding + table/index build), queries/s (300 questions, semantic: query embedding
 * included), peak RSS and CPU seconds of the child, nDCG@10 and, for IVF-PQ, ann_recall@10. Writes DIR/engines.json
 * after every child. `--child-timeout S` stops a child after S seconds (SIGTERM, SIGKILL 10 s later) and records a row
 * with `error` naming its last progress line, its peak RSS and CPU seconds per thread name read from /proc before the
 * stop (LanceDB's threads are `lance-cpu` and `tokio-rt-worker`); a failed or stopped child does not stop the others.
 * LanceDB rows also get `lancedb_build_seconds` (LanceDB's table write + index build alone, from the manifest).
 * Engine `memory-file` (issue 25) is `memory` with `limits.memory` 256MB (or `--memory`), which sends the glove-100d
 * vectors of 200k documents and more to a file that the exact search streams through; rows get the manifest's
 * `vectors` (storage, bytes). `--memory SIZE` sets `limits.memory` of every child sweep.
 * `--reuse-embeddings` copies the first finished semantic child's embedding cache into the later semantic children's
 * fresh caches (rows marked `embeddings_reused`): at 1M documents each child would otherwise embed the corpus again.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { Command } from 'commander';
import { seededRandom } from '../src/score/stats.js';
import { writeFileAtomic } from '../src/store/temp.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..');
const shared = path.resolve(repo, '../shared/datasets');
const MB = 1024 * 1024;

function sentencesOf(file: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const d = JSON.parse(line) as { text?: string };
    for (const s of (d.text ?? '').split(/(?<=[.!?])\s+/)) if (s.length > 20) out.push(s);
  }
  return out;
}

/**
 * Writes DIR/corpus-N (BEIR layout) and returns its folder. Each distractor has `sentences` = [min, max] sentences
 * (default [4, 12]: the first gives the title's 60 characters, the rest the text; with one sentence the title is empty
 * and the sentence is the text). Another range than the default writes DIR/corpus-N-sMIN-MAX.
 */
async function buildCorpus(dir: string, n: number, sentences: [number, number] = [4, 12]): Promise<string> {
  const standard = sentences[0] === 4 && sentences[1] === 12;
  const folder = path.join(dir, standard ? `corpus-${n}` : `corpus-${n}-s${sentences[0]}-${sentences[1]}`);
  if (existsSync(path.join(folder, 'corpus.jsonl'))) return folder;
  mkdirSync(path.join(folder, 'qrels'), { recursive: true });
  const scifact = path.join(shared, 'scifact');
  copyFileSync(path.join(scifact, 'queries.jsonl'), path.join(folder, 'queries.jsonl'));
  copyFileSync(path.join(scifact, 'qrels/test.tsv'), path.join(folder, 'qrels/test.tsv'));
  const range = sentences;
  const pool = [...sentencesOf(path.join(scifact, 'corpus.jsonl')), ...sentencesOf(path.join(shared, 'trec-dl-2019-5k/corpus.jsonl'))];
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
    const m = range[0] + Math.floor(r() * (range[1] - range[0] + 1));
    const parts: string[] = [];
    for (let j = 0; j < m; j++) parts.push(pool[Math.floor(r() * pool.length)]);
    const doc = m === 1 ? { _id: `syn${i}`, title: '', text: parts[0] } : { _id: `syn${i}`, title: parts[0].slice(0, 60), text: parts.slice(1).join(' ') };
    await write(JSON.stringify(doc) + '\n');
  }
  out.end();
  await once(out, 'finish');
  return folder;
}

/** Writes back dirty pages and empties the kernel's page cache (root only; throws naming the file otherwise). */
function dropPageCache(): void {
  spawnSync('sync');
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '3\n');
  } catch (e) {
    throw new Error(`--drop-caches: cannot write /proc/sys/vm/drop_caches (${(e as NodeJS.ErrnoException).code}); run as root or leave the option out`);
  }
}

interface SizeResult {
  documents: number;
  /** Per stage, seconds of wall time (the median over the runs of `--sizes NxR`). */
  seconds: Record<string, number>;
  peak_rss_mb: number;
  /**
   * CPU seconds of the whole child, every thread (`process.resourceUsage()`): `user` (the code's own work, V8's
   * collector and libuv's pool included) and `system` (the kernel's: reads, writes, page faults). On this machine
   * the kernel's share grows faster than the corpus (docs/scale.md, session 21); the two apart say which grew.
   */
  cpu_seconds?: { user: number; system: number };
  /** With `--sizes NxR`, R > 1: each run's stage seconds, CPU seconds and peak RSS, in run order. */
  runs?: { seconds: Record<string, number>; cpu_seconds?: { user: number; system: number }; peak_rss_mb: number }[];
  chunks: Record<string, number>;
  rows: number;
  ndcg10_keyword_none: number | null;
  /** Per keyword and semantic unit: build seconds and the questions' total query seconds. */
  units?: { unit: string; build_seconds: number; query_seconds: number }[];
  /**
   * Peak RSS so far (MB) when each stage event was emitted, with the seconds since the sweep started, and the current
   * RSS, V8 heap used and ArrayBuffer (typed arrays, shared and wasm memories) MB at that moment.
   */
  peak_rss_at_stage_start?: { stage: string; seconds: number; peak_rss_mb: number; rss_mb?: number; heap_used_mb?: number; array_buffers_mb?: number }[];
  /** Rows of the grid that failed (a stalled unit, a model that did not load), with the first 300 characters of the error. */
  failed_rows?: { id: string; error: string }[];
  /** bench/bm25.ts on this corpus: per engine, queries/s (depth 100), build seconds, index MB, peak RSS MB. */
  bm25?: { engine: string; queries: number; queries_per_second: number; build_seconds: number; index_mb: number; peak_rss_mb: number }[];
}

/**
 * A stage's counted progress on stderr, `<prefix><seconds> s] <stage> <done>/<total>`, at most one line per stage every
 * 30 s and its last, so a long stage shows where it is without flooding the log.
 */
function progressPrinter(prefix: string): (stage: string, done: number, total: number, seconds: number) => void {
  const last = new Map<string, number>();
  return (stage, done, total, seconds) => {
    if (done !== total && seconds - (last.get(stage) ?? -Infinity) < 30) return;
    last.set(stage, seconds);
    process.stderr.write(`${prefix}${seconds.toFixed(0)} s] ${stage} ${done}/${total}\n`);
  };
}

/** The child: one sweep, printing one JSON line with its timings and peak RSS. */
async function child(dataset: string, cacheDir: string, modes: string[], memory: string | undefined, stallSeconds?: number, progress = false): Promise<void> {
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
    limits: { ...(memory !== undefined ? { memory } : {}), ...(stallSeconds === undefined ? {} : { stallSeconds }) },
  });
  const t0 = performance.now();
  // The process's peak RSS so far, read as each stage starts: tells in which stage the peak was reached.
  const peakAtStage: NonNullable<SizeResult['peak_rss_at_stage_start']> = [];
  const progressSeen = new Set<string>();
  const printProgress = progress ? progressPrinter('[') : undefined;
  const { result, timings } = await runSweep(config, {
    resume: false,
    onEvent: (e) => {
      const seconds = (performance.now() - t0) / 1000;
      const mark = (stage: string) => {
        // Where the memory is when the stage starts: V8's heap (JS objects and strings) apart from memory outside it
        // (typed arrays, shared and wasm memories, SQLite's and LanceDB's native allocations are in rss only).
        const m = process.memoryUsage();
        peakAtStage.push({
          stage,
          seconds: Math.round(seconds),
          peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
          rss_mb: Math.round(m.rss / MB),
          heap_used_mb: Math.round(m.heapUsed / MB),
          array_buffers_mb: Math.round(m.arrayBuffers / MB),
        });
      };
      if (e.kind === 'progress' && !progressSeen.has(e.stage)) {
        progressSeen.add(e.stage);
        mark(e.stage);
      }
      if (printProgress && e.kind === 'progress') printProgress(e.stage, e.done, e.total, seconds);
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
  const usage = process.resourceUsage();
  const out: SizeResult = {
    documents: (result.manifest.dataset as { docs: number }).docs,
    seconds: timings,
    peak_rss_mb: usage.maxRSS / 1024,
    cpu_seconds: { user: usage.userCPUTime / 1e6, system: usage.systemCPUTime / 1e6 },
    chunks: Object.fromEntries(chunkings.map((c) => [c.key, c.chunks])),
    rows: result.configs.length,
    ndcg10_keyword_none: kw?.means['ndcg@10'] ?? null,
    peak_rss_at_stage_start: peakAtStage,
    units,
    failed_rows: result.configs.filter((c) => c.status === 'failed').map((c) => ({ id: c.config.id, error: (c.error ?? '').slice(0, 300) })),
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}

const ENGINES = ['bm25', 'lancedb-fts', 'memory', 'memory-file', 'lancedb', 'lancedb-ivfpq'] as const;
type Engine = (typeof ENGINES)[number];

/** One row of `--engines`: seconds, queries/s, MB. */
interface EngineRow {
  documents: number;
  engine: Engine;
  row: string;
  build_seconds: number;
  queries: number;
  queries_per_second: number;
  peak_rss_mb: number;
  sweep_seconds: number;
  'ndcg@10': number | null;
  'ann_recall@10': number | null;
  /** LanceDB rows: LanceDB's own build seconds (table write + index build; no embedding), from the unit's describe(). */
  lancedb_build_seconds?: number;
  /** Semantic rows: where the vectors were (`storage` memory or file, matrix, share and shard bytes; issue 25). */
  vectors?: unknown;
  /** True when the child found every document vector in an embedding cache copied from an earlier child (--reuse-embeddings). */
  embeddings_reused?: boolean;
  /** CPU seconds of the child, all threads (user + system). */
  cpu_seconds?: number;
  /** A stopped child's CPU seconds per thread name (`node`, LanceDB's `lance-cpu` and `tokio-rt-worker`, …). */
  cpu_seconds_by_thread?: Record<string, number>;
  error?: string;
}

/** One LanceDB unit in the manifest (`lancedbFts[]`, `embeddings[].lancedb[]`): its describe() when it was built. */
interface LanceUnitInfo {
  unit: string;
  describe?: { buildSeconds?: number; writeSeconds?: number; index?: { buildSeconds?: number } };
}

/** An `--engines` child: one sweep with one engine's rows; prints one JSON line of EngineRow (without documents). */
async function engineChild(dataset: string, cacheDir: string, engine: Engine, memory: string | undefined): Promise<void> {
  if (!ENGINES.includes(engine)) throw new Error(`unknown engine ${engine}; one of ${ENGINES.join(', ')}`);
  const { parseConfig } = await import('../src/config/schema.js');
  const { runSweep } = await import('../src/run/sweep.js');
  const keyword = engine === 'bm25' || engine === 'lancedb-fts';
  const semantic =
    engine === 'memory' || engine === 'memory-file'
      ? [{ engine: 'memory' }]
      : engine === 'lancedb'
        ? [{ engine: 'lancedb' }]
        : [
            { engine: 'lancedb', index: 'ivf_pq' },
            { engine: 'lancedb', index: 'ivf_pq', refineFactor: 10 },
          ];
  const config = parseConfig({
    name: `engines-${engine}`,
    dataset: { path: dataset, split: 'test' },
    chunking: { sizes: ['none'] },
    topK: [10],
    modes: [keyword ? 'keyword' : 'semantic'],
    ...(keyword ? { keyword: [{ engine }] } : { embeddings: ['glove-100d'], semantic }),
    primaryMetric: 'ndcg@10',
    cacheDir,
    // memory-file: the exact in-memory engine with a budget that sends the vectors to a file (issue 25)
    ...(memory !== undefined || engine === 'memory-file' ? { limits: { memory: memory ?? '256MB' } } : {}),
  });
  const t0 = performance.now();
  const progress = progressPrinter(`  [${engine} `);
  const { result } = await runSweep(config, {
    resume: false,
    onEvent: (e) => {
      const at = (performance.now() - t0) / 1000;
      if (e.kind === 'stage' || e.kind === 'warning') process.stderr.write(`  [${engine} ${at.toFixed(0)} s] ${e.kind === 'warning' ? `warning: ${e.message}` : `${e.stage} ${e.detail ?? ''}`}\n`);
      if (e.kind === 'progress') progress(e.stage, e.done, e.total, at);
    },
  });
  const sweepSeconds = (performance.now() - t0) / 1000;
  // LanceDB's own build seconds per unit (table write + index), from the manifest's describe() of each LanceDB unit.
  const lanceSeconds = new Map<string, number>();
  const manifest = result.manifest as { lancedbFts?: LanceUnitInfo[]; embeddings?: { lancedb?: LanceUnitInfo[] }[] };
  for (const u of [...(manifest.lancedbFts ?? []), ...(manifest.embeddings ?? []).flatMap((e) => e.lancedb ?? [])]) {
    const d = u.describe;
    if (d) lanceSeconds.set(u.unit, (d.buildSeconds ?? 0) + (d.writeSeconds ?? 0) + (d.index?.buildSeconds ?? 0));
  }
  const usage = process.resourceUsage();
  const peak = usage.maxRSS / 1024;
  const cpuSeconds = +((usage.userCPUTime + usage.systemCPUTime) / 1e6).toFixed(1);
  const vectors = (manifest.embeddings as ({ vectors?: unknown } | undefined)[] | undefined)?.[0]?.vectors;
  for (const c of result.configs)
    process.stdout.write(
      JSON.stringify({
        engine,
        ...(vectors !== undefined ? { vectors } : {}),
        row: c.config.id,
        build_seconds: +c.buildSeconds.toFixed(2),
        queries: c.questions,
        queries_per_second: +(c.meanQueryMs > 0 ? 1000 / c.meanQueryMs : 0).toFixed(1),
        peak_rss_mb: Math.round(peak),
        sweep_seconds: +sweepSeconds.toFixed(1),
        cpu_seconds: cpuSeconds,
        ...(lanceSeconds.has(c.config.id.replace(/\.k10$/, '')) ? { lancedb_build_seconds: +lanceSeconds.get(c.config.id.replace(/\.k10$/, ''))!.toFixed(2) } : {}),
        'ndcg@10': c.status === 'ok' ? +c.means['ndcg@10'].toFixed(4) : null,
        'ann_recall@10': c.means['ann_recall@10'] !== undefined ? +c.means['ann_recall@10'].toFixed(3) : null,
        ...(c.error ? { error: c.error } : {}),
      }) + '\n',
    );
}

/** What /proc says about a running child (Linux; empty elsewhere): peak RSS, CPU seconds, and CPU seconds per thread name. */
function procSnapshot(pid: number): { peak_rss_mb?: number; cpu_seconds?: number; cpu_seconds_by_thread?: Record<string, number> } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
    const byThread: Record<string, number> = {};
    let total = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      } catch {
        continue;
      }
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const sec = (Number(f[11]) + Number(f[12])) / 100; // utime + stime, USER_HZ ticks
      byThread[name] = +((byThread[name] ?? 0) + sec).toFixed(2);
      total += sec;
    }
    return { ...(hwm ? { peak_rss_mb: Math.round(Number(hwm[1]) / 1024) } : {}), cpu_seconds: +total.toFixed(2), cpu_seconds_by_thread: byThread };
  } catch {
    return {};
  }
}

/**
 * Runs one `--engines` child per engine on corpus `folder` (fresh cache each, the glove table shared). A child that
 * fails or runs longer than `timeoutSeconds` (then stopped: SIGTERM, SIGKILL 10 s later) gives one row with `error`
 * saying where it was (its last progress line) and what it had used (peak RSS, CPU seconds per thread name, read from
 * /proc just before the stop); the next engine still runs. `onRows` gets the rows so far after each child (to save them).
 */
async function runEngines(
  dir: string,
  folder: string,
  n: number,
  engines: Engine[],
  memory: string | undefined,
  keep: boolean,
  timeoutSeconds: number | undefined,
  reuseEmbeddings: boolean,
  onRows: (rows: EngineRow[]) => void,
): Promise<EngineRow[]> {
  const rows: EngineRow[] = [];
  const glove = path.join(dir, 'glove-shared');
  let embeddings: string | undefined; // embeddings.sqlite of the first semantic child that finished
  for (const engine of engines) {
    const cache = path.join(dir, `cache-${n}-${engine}`);
    rmSync(cache, { recursive: true, force: true });
    mkdirSync(cache, { recursive: true });
    const semantic = engine !== 'bm25' && engine !== 'lancedb-fts';
    const reused = reuseEmbeddings && semantic && embeddings !== undefined;
    if (reused)
      for (const suffix of ['', '-wal'])
        if (existsSync(embeddings! + suffix)) copyFileSync(embeddings! + suffix, path.join(cache, `embeddings.sqlite${suffix}`));
    // The glove-100d binary table is a one-time conversion of the model file, not part of any engine's cost.
    mkdirSync(path.join(glove, 'glove-100d'), { recursive: true });
    symlinkSync(path.join(glove, 'glove-100d'), path.join(cache, 'glove-100d'));
    const t0 = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', '--max-old-space-size=16384', fileURLToPath(import.meta.url), '--child', folder, '--cache', cache, '--engine', engine, ...(memory !== undefined ? ['--memory', memory] : [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let lastLine = '(no progress line yet)';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      process.stderr.write(d);
      const lines = d.split('\n').filter((l) => l.trim());
      if (lines.length > 0) lastLine = lines[lines.length - 1].trim();
    });
    let stopped: (ReturnType<typeof procSnapshot> & { after_seconds: number; last_line: string }) | undefined;
    const timer =
      timeoutSeconds === undefined
        ? undefined
        : setTimeout(() => {
            stopped = { ...procSnapshot(child.pid!), after_seconds: Math.round((performance.now() - t0) / 1000), last_line: lastLine };
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
          }, timeoutSeconds * 1000);
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    if (timer) clearTimeout(timer);
    const these: EngineRow[] = [];
    if (code === 0 && !stopped) {
      for (const line of stdout.trim().split('\n'))
        these.push({ documents: n, ...(JSON.parse(line) as Omit<EngineRow, 'documents'>), ...(reused ? { embeddings_reused: true } : {}) });
      const file = path.join(cache, 'embeddings.sqlite');
      if (reuseEmbeddings && semantic && embeddings === undefined && existsSync(file)) {
        // the main file and, if the child left one, its write-ahead log (SQLite replays it on open)
        embeddings = path.join(dir, `embeddings-${n}.sqlite`);
        for (const suffix of ['', '-wal']) if (existsSync(file + suffix)) copyFileSync(file + suffix, embeddings + suffix);
      }
    }
    else
      these.push({
        documents: n,
        engine,
        row: `(${engine} child ${stopped ? `stopped after ${stopped.after_seconds} s` : `exit ${code}`})`,
        build_seconds: NaN,
        queries: 0,
        queries_per_second: 0,
        peak_rss_mb: stopped?.peak_rss_mb ?? NaN,
        sweep_seconds: +((performance.now() - t0) / 1000).toFixed(1),
        'ndcg@10': null,
        'ann_recall@10': null,
        ...(stopped ? { cpu_seconds: stopped.cpu_seconds, cpu_seconds_by_thread: stopped.cpu_seconds_by_thread } : {}),
        error: stopped ? `stopped after ${stopped.after_seconds} s (--child-timeout ${timeoutSeconds}); last line: ${stopped.last_line}` : `exit ${code}; last line: ${lastLine}`,
      });
    for (const row of these) process.stderr.write(`${n} ${JSON.stringify(row)}\n`);
    rows.push(...these);
    onRows(rows);
    if (!keep) rmSync(cache, { recursive: true, force: true });
  }
  return rows;
}

async function main(): Promise<void> {
  const program = new Command()
    .name('bench:scale')
    .option('--out <dir>', 'work folder for corpora, caches and scale.json', '.cache/bench-scale')
    .option('--sizes <list>', 'document counts, comma separated; NxR runs size N R times (medians reported, e.g. 1000000x3,10000000)', '20000,200000,1000000')
    .option('--keep', 'keep the synthetic corpora and caches afterwards')
    .option('--bm25 <engines>', 'BM25 engines to time on each corpus (ours,wink,minisearch; none to skip)')
    .option('--bm25-peer-queries <n>', 'queries timed for wink and minisearch (ours gets all)', '30')
    .option('--corpora-only', 'write the synthetic corpora (DIR/corpus-N) and stop')
    .option('--modes <list>', 'modes of the grid (a subset, for diagnosis)', 'keyword,semantic,hybrid')
    .option('--engines <list>', 'time these engines one child each instead (bm25,lancedb-fts,memory,memory-file,lancedb,lancedb-ivfpq)')
    .option('--memory <size>', 'limits.memory of every child sweep (e.g. 12GB); memory-file children default to 256MB')
    .option('--reuse-embeddings', 'with --engines: semantic children after the first start from its embedding cache (build seconds then exclude embedding)')
    .option('--child-timeout <seconds>', 'with --engines: stop a child after this many seconds and record where it was')
    .option('--engine <name>', '(internal) the engine of an --engines child')
    .option('--child <dataset>', '(internal) run one sweep on this dataset folder')
    .option('--cache <dir>', '(internal) the child\'s cache folder')
    .option('--stall-seconds <s>', "the grid's limits.stallSeconds (default the config's, 300): at 1M documents the corpus embedding can outlast it")
    .option('--progress', "print each stage's counted progress (texts embedded, chunks cut) at most every 30 s")
    .option('--sentences <min-max>', 'sentences per distractor document (default 4-12; 1-1 for one-sentence documents, in DIR/corpus-N-s1-1)', '4-12')
    .option('--drop-caches', "empty the kernel's page cache before each size's sweep (root: writes /proc/sys/vm/drop_caches), so every size reads its corpus from the disk");
  program.parse();
  const o = program.opts<{
    out: string;
    sizes: string;
    keep?: boolean;
    corporaOnly?: boolean;
    modes: string;
    bm25?: string;
    bm25PeerQueries: string;
    child?: string;
    cache?: string;
    engines?: string;
    engine?: string;
    childTimeout?: string;
    reuseEmbeddings?: boolean;
    memory?: string;
    stallSeconds?: string;
    progress?: boolean;
    sentences: string;
    dropCaches?: boolean;
  }>();
  const range = /^(\d+)-(\d+)$/.exec(o.sentences);
  if (!range || Number(range[1]) < 1 || Number(range[2]) < Number(range[1])) throw new Error(`--sentences ${o.sentences}: expected MIN-MAX with 1 ≤ MIN ≤ MAX, e.g. 4-12`);
  const sentences: [number, number] = [Number(range[1]), Number(range[2])];
  const stall = o.stallSeconds === undefined ? [] : ['--stall-seconds', o.stallSeconds];
  if (o.child && o.engine) return engineChild(o.child, o.cache!, o.engine as Engine, o.memory);
  if (o.child) return child(o.child, o.cache!, o.modes.split(','), o.memory, o.stallSeconds === undefined ? undefined : Number(o.stallSeconds), Boolean(o.progress));
  if (!existsSync(path.join(shared, 'scifact/corpus.jsonl'))) {
    process.stderr.write(`bench:scale: SciFact not found under ${shared}; nothing measured\n`);
    process.exitCode = 1;
    return;
  }
  const dir = path.resolve(o.out);
  mkdirSync(dir, { recursive: true });
  const sizes = o.sizes.split(',').map(parseSize);
  const results: SizeResult[] = [];
  const engineRows: EngineRow[] = [];
  for (const { documents: n, repeat } of sizes) {
    const t = performance.now();
    const folder = await buildCorpus(dir, n, sentences);
    process.stderr.write(`corpus of ${n} documents ready in ${((performance.now() - t) / 1000).toFixed(1)} s: ${folder}\n`);
    if (o.corporaOnly) continue;
    if (o.engines) {
      const save = (rows: EngineRow[]) =>
        writeFileAtomic(path.join(dir, 'engines.json'), JSON.stringify({ createdAt: new Date().toISOString(), node: process.version, rows: [...engineRows, ...rows] }, null, 2) + '\n', 'check that --out is writable and the disk has room');
      const timeout = o.childTimeout === undefined ? undefined : Number(o.childTimeout);
      engineRows.push(...(await runEngines(dir, folder, n, o.engines.split(',') as Engine[], o.memory, Boolean(o.keep), timeout, Boolean(o.reuseEmbeddings), save)));
      continue;
    }
    const cache = path.join(dir, `cache-${n}`);
    const runs: SizeResult[] = [];
    for (let k = 0; k < repeat; k++) {
      rmSync(cache, { recursive: true, force: true });
      if (o.dropCaches) dropPageCache();
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--max-old-space-size=16384', fileURLToPath(import.meta.url), '--child', folder, '--cache', cache, '--modes', o.modes, ...(o.memory !== undefined ? ['--memory', o.memory] : []), ...stall, ...(o.progress ? ['--progress'] : [])], {
        stdio: ['ignore', 'pipe', 'inherit'],
        encoding: 'utf8',
        maxBuffer: 1 << 26,
      });
      if (r.status !== 0) throw new Error(`the sweep on ${n} documents failed (exit ${r.status})`);
      const line = r.stdout.trim().split('\n').pop()!;
      runs.push(JSON.parse(line) as SizeResult);
      process.stderr.write(`${n}${repeat > 1 ? ` (run ${k + 1} of ${repeat})` : ''}: ${line}\n`);
    }
    const sized = mediansOf(runs);
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
    writeScaleReport(dir, results, false); // a run stopped later keeps the sizes done so far
    if (!o.keep) rmSync(cache, { recursive: true, force: true });
  }
  if (o.corporaOnly) return;
  if (o.engines) {
    process.stdout.write(JSON.stringify(engineRows, null, 2) + '\n');
    return;
  }
  process.stdout.write(JSON.stringify(writeScaleReport(dir, results, true), null, 2) + '\n');
}

/** `N` or `NxR` of `--sizes`: N documents (an integer ≥ 1), run R times (an integer ≥ 1, default 1). */
function parseSize(text: string): { documents: number; repeat: number } {
  const m = /^(\d+)(?:x(\d+))?$/.exec(text.trim());
  if (!m || Number(m[1]) < 1 || (m[2] !== undefined && Number(m[2]) < 1)) throw new Error(`--sizes: "${text}" is not N or NxR (N documents, R runs, both integers >= 1), e.g. 1000000x3`);
  return { documents: Number(m[1]), repeat: m[2] === undefined ? 1 : Number(m[2]) };
}

/** The median of `values` (non-empty): the middle one, or the mean of the middle two. */
function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const h = v.length >> 1;
  return v.length % 2 === 1 ? v[h] : (v[h - 1] + v[h]) / 2;
}

/**
 * One size's result from its runs: the first run's fields, with stage seconds, CPU seconds and peak RSS replaced by
 * their medians over the runs (per stage, over the runs that have it), and each run's figures under `runs`. One run
 * is returned as it is.
 */
function mediansOf(runs: SizeResult[]): SizeResult {
  if (runs.length === 1) return runs[0];
  const stages = [...new Set(runs.flatMap((r) => Object.keys(r.seconds)))];
  const seconds = Object.fromEntries(stages.map((s) => [s, median(runs.filter((r) => s in r.seconds).map((r) => r.seconds[s]))]));
  const cpu = runs.every((r) => r.cpu_seconds !== undefined)
    ? { user: median(runs.map((r) => r.cpu_seconds!.user)), system: median(runs.map((r) => r.cpu_seconds!.system)) }
    : undefined;
  return {
    ...runs[0],
    seconds,
    peak_rss_mb: median(runs.map((r) => r.peak_rss_mb)),
    ...(cpu === undefined ? {} : { cpu_seconds: cpu }),
    runs: runs.map((r) => ({ seconds: r.seconds, ...(r.cpu_seconds === undefined ? {} : { cpu_seconds: r.cpu_seconds }), peak_rss_mb: r.peak_rss_mb })),
  };
}

/**
 * Writes DIR/scale.json (whole or not at all: a temporary file renamed into place): the sizes measured so far and the
 * growth exponents between consecutive ones. Called after every size with `complete` false, so a run stopped or failed
 * during a later size keeps what it measured, and at the end with `complete` true. Returns the report.
 */
function writeScaleReport(dir: string, results: SizeResult[], complete: boolean): Record<string, unknown> {
  const growth: Record<string, Record<string, number>> = {};
  for (let i = 1; i < results.length; i++) {
    const a = results[i - 1];
    const b = results[i];
    const key = `${a.documents}->${b.documents}`;
    growth[key] = {};
    for (const stage of Object.keys(b.seconds))
      if (a.seconds[stage] > 0 && b.seconds[stage] > 0) growth[key][stage] = Math.log(b.seconds[stage] / a.seconds[stage]) / Math.log(b.documents / a.documents);
    // the CPU seconds too: user (the code's work) and system (the kernel's), whose growth can differ (docs/scale.md)
    for (const part of ['user', 'system'] as const) {
      const x = a.cpu_seconds?.[part];
      const y = b.cpu_seconds?.[part];
      if (x !== undefined && y !== undefined && x > 0 && y > 0) growth[key][`cpu_${part}`] = Math.log(y / x) / Math.log(b.documents / a.documents);
    }
  }
  const report = { createdAt: new Date().toISOString(), node: process.version, complete, sizes: results, growth_exponent: growth };
  writeFileAtomic(path.join(dir, 'scale.json'), JSON.stringify(report, null, 2) + '\n', 'check that --out is writable and the disk has room');
  return report;
}

await main();
