/**
 * Reproduction of issue 26: LanceDB 0.31.0's full-text index build waits forever on machines whose Lance CPU pool has
 * one thread (1-3 CPUs; lancedb/lancedb#3568, see docs/lancedb.md "The FTS build hang").
 *
 *   npx tsx scripts/lancedb-fts-hang.ts [--docs 3000] [--words 800] [--corpus path/corpus.jsonl] [--timeout 60]
 *       [--only raw|adapter]
 *
 * Builds one FTS table of `--docs` documents, twice, each in a fresh child process with a fresh folder:
 * - `raw`: LanceDB directly (createTable, createIndex(Index.fts({ withPosition: false })), one query), with Lance's
 *   own thread defaults (the LANCE_* variables removed from the child's environment);
 * - `adapter`: the same documents through `lancedbKeywordRetriever` (src/retrieve/lancedb.ts), which sets
 *   LANCE_CPU_THREADS / LANCE_FTS_NUM_SHARDS before LanceDB loads (`lanceThreadEnv`).
 * Documents are `--words` words drawn with a seeded generator from 50,000 random 7-letter words (the default 3,000 ×
 * 800 hangs on a 2-CPU machine; 2,500 does not), or the first `--docs` lines of a BEIR corpus.jsonl (`--corpus`; the
 * bench's synthetic corpus hangs from about 17,000 documents). Each child prints a line every 5 s while it waits (its
 * CPU seconds: a hang uses none) and is killed after `--timeout` s. Prints one JSON line per case to stdout:
 * { case, docs, finished, seconds, cpuThreads }; exit code 1 when the adapter case does not finish.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { seededRandom } from '../src/score/stats.js';

const args = process.argv.slice(2);
const opt = (name: string, d?: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : d;
};

/** The documents: `--corpus` lines, or seeded random words. */
function documents(n: number, words: number, corpus: string | undefined): { id: string; text: string }[] {
  if (corpus !== undefined)
    return readFileSync(corpus, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(0, n)
      .map((l) => {
        const d = JSON.parse(l) as { _id: string; title?: string; text?: string };
        return { id: d._id, text: `${d.title ?? ''} ${d.text ?? ''}` };
      });
  const r = seededRandom(26);
  const word = (): string => Array.from({ length: 7 }, () => String.fromCharCode(97 + Math.floor(r() * 26))).join('');
  const vocab = Array.from({ length: 50_000 }, word);
  return Array.from({ length: n }, (_, i) => ({ id: `d${i}`, text: Array.from({ length: words }, () => vocab[Math.floor(r() * vocab.length)]).join(' ') }));
}

/** The child: builds and queries one table, then prints `{ finished: true, seconds, cpuThreads }`. */
async function child(kind: 'raw' | 'adapter', docs: { id: string; text: string }[], dir: string): Promise<void> {
  const t0 = performance.now();
  const timer = setInterval(() => {
    const cpu = process.cpuUsage();
    process.stderr.write(`  [${kind} ${((performance.now() - t0) / 1000).toFixed(0)} s] waiting, CPU ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s\n`);
  }, 5000);
  if (kind === 'raw') {
    process.env.LANCEDB_LOG ??= 'error';
    const require = createRequire(import.meta.url);
    const lance = require('@lancedb/lancedb') as typeof import('@lancedb/lancedb');
    const db = await lance.connect(dir);
    const table = await db.createTable('k', docs, { mode: 'overwrite' });
    await table.createIndex('text', { config: lance.Index.fts({ withPosition: false }), replace: true });
    await table.search(docs[0].text.split(' ')[0], 'fts').limit(10).toArray();
    table.close();
    db.close();
  } else {
    const { lancedbKeywordRetriever } = await import('../src/retrieve/lancedb.js');
    const chunks = docs.map((d) => ({ id: `${d.id}#0`, docId: d.id, ordinal: 0, text: d.text, start: 0, end: d.text.length, tokens: 0 }));
    const signal = new AbortController().signal;
    const r = await lancedbKeywordRetriever()({ documents: [], chunks, chunking: { size: null, overlap: 0 }, chunkingKey: 'none', options: {}, signal, cacheDir: dir });
    await r.search({ id: 'q', text: docs[0].text.split(' ')[0] }, 10, signal);
    await r.close?.();
  }
  clearInterval(timer);
  process.stdout.write(JSON.stringify({ finished: true, seconds: (performance.now() - t0) / 1000, cpuThreads: process.env.LANCE_CPU_THREADS ?? 'lance default' }) + '\n');
}

async function main(): Promise<void> {
  const n = Number(opt('--docs', '3000'));
  const words = Number(opt('--words', '800'));
  const corpus = opt('--corpus');
  const kind = opt('--child') as 'raw' | 'adapter' | undefined;
  if (kind !== undefined) return child(kind, documents(n, words, corpus), opt('--dir')!);
  const timeout = Number(opt('--timeout', '60'));
  const only = opt('--only');
  let adapterFinished = true;
  for (const c of ['raw', 'adapter'] as const) {
    if (only !== undefined && only !== c) continue;
    const dir = mkdtempSync(path.join(tmpdir(), `lancedb-fts-hang-${c}-`));
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LANCE_')));
    const passOn = ['--docs', String(n), '--words', String(words), ...(corpus ? ['--corpus', corpus] : [])];
    const t0 = performance.now();
    const p = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', c, '--dir', dir, ...passOn], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    const killer = setTimeout(() => p.kill('SIGKILL'), timeout * 1000);
    await new Promise<void>((resolve) => p.on('close', () => resolve()));
    clearTimeout(killer);
    rmSync(dir, { recursive: true, force: true });
    const line = out.trim().split('\n').pop();
    const r = line ? (JSON.parse(line) as { finished: boolean; seconds: number; cpuThreads: string }) : undefined;
    if (c === 'adapter' && r === undefined) adapterFinished = false;
    process.stdout.write(
      JSON.stringify({ case: c, docs: n, finished: r !== undefined, seconds: +(r?.seconds ?? (performance.now() - t0) / 1000).toFixed(1), cpuThreads: r?.cpuThreads ?? null }) +
        '\n',
    );
  }
  if (!adapterFinished) process.exitCode = 1;
}

await main();
