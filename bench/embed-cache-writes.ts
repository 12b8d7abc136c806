/**
 * The embedding cache's cold writes at scale (sessions 12 and 19, docs/scale.md "The embedding cache's writes"): puts
 * of 32 into a file that already holds `--rows` vectors (0: a cold fill, as the sweep's first run does), through three
 * paths side by side on copies of one file:
 * - `schema2`: the put of sessions 9-11 (a random ~270-byte text key into `key TEXT PRIMARY KEY`, then its lru entry),
 *   replayed on raw SQL over a schema-2 copy (frozen in bench/cache-schema2.ts);
 * - `schema3`: the put of sessions 12-18 (whole rows staged, merged into the `(model, digest)` index every 2^20 rows),
 *   replayed on raw SQL over a schema-3 copy (frozen in bench/cache-schema3.ts);
 * - `current`: `EmbeddingCache` as the sweep opens it (schema 4: each vector appended once, its key staged and merged
 *   into `keys` in key order); the closing merge is timed with the puts in every path.
 *
 *   npm run bench:embed-cache-writes -- [--rows 2000000] [--puts 262144] [--d 100] [--reps 1] [--skip-schema2] [--dir /tmp/cache-writes]
 *
 * The base files are filled fast (rows in key order, one transaction per 100,000; the schema-4 base is the schema-3 one
 * migrated by the current code) and copied before each path, so each starts from the same rows. Output per path and
 * repetition: µs a row (wall), CPU µs a row of the process, KB written a row (`write_bytes` of /proc/self/io, WAL and
 * checkpoints included), then the medians and the ratios to `schema3`; load before and after. `schema3` and `current`
 * must store the same vectors: every key put is read back from both files and compared.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Command } from 'commander';
import { EmbeddingCache, rowChecksum } from '../src/embed/cache.js';
import { schema2File, schema2Put } from './cache-schema2.js';
import { schema3File, schema3Writer } from './cache-schema3.js';

const opts = new Command()
  .name('bench:embed-cache-writes')
  .option('--rows <n>', 'vectors in the file before the timed puts', '2000000')
  .option('--puts <n>', 'vectors put, in puts of 32', '262144')
  .option('--d <n>', 'dimensions', '100')
  .option('--reps <n>', 'repetitions of each path (median reported)', '1')
  .option('--skip-schema2', 'leave out the schema-2 path (its random text-key inserts take minutes past a few million rows)')
  .option('--dir <path>', 'scratch folder (removed at the end)', '/tmp/cache-writes')
  .parse()
  .opts<{ rows: string; puts: string; d: string; reps: string; skipSchema2?: boolean; dir: string }>();
const [rows, puts, d, reps] = [Number(opts.rows), Number(opts.puts), Number(opts.d), Number(opts.reps)];
if (!(rows >= 0 && puts >= 32 && d >= 1 && reps >= 1)) throw new Error('--rows ≥ 0, --puts ≥ 32, --d ≥ 1, --reps ≥ 1');

const FILES = ['', '-wal', '-shm'];
const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const written = (): number => Number(/write_bytes: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
const providerKey = `glove-100d|${JSON.stringify({ table: 'a'.repeat(64), tokenizer: 1, pooling: 'mean', normalize: true, prefix: '' })}`;
const digestHex = (i: number): string => createHash('sha256').update(`text ${i}`).digest('hex');
const keyOf = (i: number): string => `${providerKey}\u0000${digestHex(i)}`;
const vectorOf = (i: number): Float32Array => {
  const v = new Float32Array(d);
  for (let j = 0; j < d; j++) v[j] = Math.fround(Math.sin(i * 31 + j));
  return v;
};
const bytesOf = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

/** Rows 0..rows-1 in key order into `file`: a schema-3 file or a schema-2 one (raw SQL, frozen layouts). */
function fill(file: string, schema: 2 | 3): void {
  for (const s of FILES) rmSync(file + s, { force: true });
  const order = Array.from({ length: rows }, (_, i) => i).sort((a, b) => (digestHex(a) < digestHex(b) ? -1 : 1));
  let db: Database.Database;
  if (schema === 3) {
    db = schema3File(file);
    db.prepare('INSERT INTO models (key) VALUES (?)').run(providerKey);
  } else {
    db = schema2File(file);
  }
  const ins =
    schema === 3
      ? db.prepare('INSERT INTO embeddings (model, digest, vec, sum, last_used) VALUES (1, ?, ?, ?, 1) RETURNING rowid')
      : db.prepare('INSERT INTO embeddings (key, vec, sum, last_used) VALUES (?, ?, ?, 1) RETURNING rowid');
  const lru = db.prepare('INSERT INTO lru (id, last_used) VALUES (?, 1)');
  for (let s = 0; s < rows; s += 100_000) {
    db.transaction(() => {
      for (const i of order.slice(s, s + 100_000)) {
        const b = bytesOf(vectorOf(i));
        const k = keyOf(i);
        const { rowid } = ins.get(schema === 3 ? Buffer.from(digestHex(i), 'hex') : k, b, rowChecksum(k, b)) as { rowid: number };
        lru.run(rowid);
      }
    })();
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

function copy(from: string, name: string): string {
  const f = path.join(opts.dir, name);
  for (const s of FILES) rmSync(f + s, { force: true });
  copyFileSync(from, f);
  return f;
}

type Path = 'schema2' | 'schema3' | 'current';
function timed(p: Path, bases: Record<Path, string>): { us: number; cpu: number; kb: number; file: string } {
  const file = copy(bases[p], `${p}.sqlite`);
  const batches = Math.floor(puts / 32);
  const entries = (b: number) => Array.from({ length: 32 }, (_, j) => [keyOf(rows + b * 32 + j), vectorOf(rows + b * 32 + j)] as const);
  let put: (e: readonly (readonly [string, Float32Array])[]) => void;
  let close: () => void;
  if (p === 'schema2') {
    const db = new Database(file, { timeout: 10_000 });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 16384');
    db.pragma(`journal_size_limit = ${16384 * 4096}`);
    put = (e) => schema2Put(db, e);
    close = () => db.close();
  } else if (p === 'schema3') {
    const db = new Database(file, { timeout: 10_000 });
    db.pragma('cache_size = -65536');
    const w = schema3Writer(db);
    put = (e) => w.put(e);
    close = () => w.close();
  } else {
    const c = EmbeddingCache.open(file);
    put = (e) => c.put(e);
    close = () => c.close();
  }
  const w0 = written();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let b = 0; b < batches; b++) put(entries(b));
  close();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const n = batches * 32;
  return { us: (ms * 1000) / n, cpu: (cpu.user + cpu.system) / n, kb: (written() - w0) / 1024 / n, file };
}

function main(): void {
  rmSync(opts.dir, { recursive: true, force: true });
  mkdirSync(opts.dir, { recursive: true });
  console.log(`rows ${rows}, puts ${puts}, d ${d}, reps ${reps}; load before: ${load()}`);
  const paths: Path[] = opts.skipSchema2 ? ['schema3', 'current'] : ['schema2', 'schema3', 'current'];
  const bases: Record<Path, string> = {
    schema2: path.join(opts.dir, 'base2.sqlite'),
    schema3: path.join(opts.dir, 'base3.sqlite'),
    current: path.join(opts.dir, 'base4.sqlite'),
  };
  let t = performance.now();
  if (!opts.skipSchema2) fill(bases.schema2, 2);
  fill(bases.schema3, 3);
  console.log(`fill: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  copyFileSync(bases.schema3, bases.current);
  t = performance.now();
  EmbeddingCache.open(bases.current).close(); // migrated to the current schema
  console.log(`migration of the ${rows}-row schema-3 base on open: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const got = Object.fromEntries(paths.map((p) => [p, { us: [] as number[], cpu: [] as number[], kb: [] as number[] }])) as Record<Path, { us: number[]; cpu: number[]; kb: number[] }>;
  for (let r = 0; r < reps; r++) {
    for (const p of r % 2 === 0 ? paths : [...paths].reverse()) {
      const m = timed(p, bases);
      got[p].us.push(m.us);
      got[p].cpu.push(m.cpu);
      got[p].kb.push(m.kb);
      console.log(`rep ${r + 1} ${p.padEnd(7)}: ${m.us.toFixed(1)} µs a row, CPU ${m.cpu.toFixed(1)} µs, ${m.kb.toFixed(2)} KB written a row`);
    }
    // schema3 and current stored the same vectors (the schema-3 copy is read through the current code, which migrates it)
    t = performance.now();
    const a = EmbeddingCache.open(path.join(opts.dir, 'schema3.sqlite'));
    const b = EmbeddingCache.open(path.join(opts.dir, 'current.sqlite'));
    for (let s = 0; s < puts; s += 4096) {
      const keys = Array.from({ length: Math.min(4096, puts - s) }, (_, j) => keyOf(rows + s + j));
      const x = a.get(keys);
      const y = b.get(keys);
      keys.forEach((k, j) => {
        if (x[j] === undefined || y[j] === undefined || !bytesOf(x[j]!).equals(bytesOf(y[j]!))) throw new Error(`schema3 and current differ at ${k}`);
      });
    }
    a.close();
    b.close();
  }
  console.log('');
  console.log(`median of ${reps} (µs a row wall / CPU µs a row / KB written a row), and current / schema3:`);
  for (const p of paths) {
    console.log(`  ${p.padEnd(7)}: ${median(got[p].us).toFixed(1)} / ${median(got[p].cpu).toFixed(1)} / ${median(got[p].kb).toFixed(2)}`);
  }
  const ratio = (k: 'us' | 'cpu' | 'kb'): string => (median(got.current[k]) / median(got.schema3[k])).toFixed(2);
  console.log(`  ratio  : ${ratio('us')} / ${ratio('cpu')} / ${ratio('kb')}`);
  console.log(`same vectors stored by schema3 and current: yes; load after: ${load()}`);
  rmSync(opts.dir, { recursive: true, force: true });
}

main();
