/**
 * The embedding cache's cold writes at scale (session 12, docs/scale.md "The embedding cache's writes (session 12)"):
 * puts of 32 into a file that already holds `--rows` vectors, through three paths side by side on copies of one file:
 * - `schema2`: the put of sessions 9-11 (a random ~270-byte text key into `key TEXT PRIMARY KEY`, then its lru entry),
 *   replayed on raw SQL over a schema-2 copy (frozen here);
 * - `direct`: `EmbeddingCache` with `mergeRows: 0` (schema 3, every put into the `(model, digest)` index);
 * - `staged`: `EmbeddingCache` as the sweep opens it (puts staged, merged in key order; the closing merge is timed).
 *
 *   npm run bench:embed-cache-writes -- [--rows 2000000] [--puts 262144] [--d 100] [--reps 1] [--dir /tmp/cache-writes]
 *
 * The base files are filled fast (rows in key order, one transaction per 100,000) and copied before each path, so each
 * starts from the same bytes. Output per path and repetition: µs a row (wall), CPU µs a row of the process, KB written a
 * row (`write_bytes` of /proc/self/io, WAL and checkpoints included), then the medians; load before and after. The paths
 * must store the same vectors: every stored key's vector is read back from the `staged` and `direct` files and compared.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Command } from 'commander';
import { EmbeddingCache, rowChecksum } from '../src/embed/cache.js';
import { schema2File, schema2Put } from './cache-schema2.js';

const opts = new Command()
  .name('bench:embed-cache-writes')
  .option('--rows <n>', 'vectors in the file before the timed puts', '2000000')
  .option('--puts <n>', 'vectors put, in puts of 32', '262144')
  .option('--d <n>', 'dimensions', '100')
  .option('--reps <n>', 'repetitions of each path (median reported)', '1')
  .option('--dir <path>', 'scratch folder (removed at the end)', '/tmp/cache-writes')
  .parse()
  .opts<{ rows: string; puts: string; d: string; reps: string; dir: string }>();
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

/** Rows 0..rows-1 in key order into `file`: a schema-3 file (made by EmbeddingCache) or a schema-2 one (raw). */
function fill(file: string, schema: 2 | 3): void {
  for (const s of FILES) rmSync(file + s, { force: true });
  const order = Array.from({ length: rows }, (_, i) => i).sort((a, b) => (digestHex(a) < digestHex(b) ? -1 : 1));
  let db: Database.Database;
  if (schema === 3) {
    EmbeddingCache.open(file).close();
    db = new Database(file);
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

type Path = 'schema2' | 'direct' | 'staged';
function timed(p: Path, base2: string, base3: string): { us: number; cpu: number; kb: number; file: string } {
  const file = copy(p === 'schema2' ? base2 : base3, `${p}.sqlite`);
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
  } else {
    const c = EmbeddingCache.open(file, p === 'direct' ? { mergeRows: 0 } : {});
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
  const base2 = path.join(opts.dir, 'base2.sqlite');
  const base3 = path.join(opts.dir, 'base3.sqlite');
  let t = performance.now();
  fill(base2, 2);
  fill(base3, 3);
  console.log(`fill: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const got: Record<Path, { us: number[]; cpu: number[]; kb: number[] }> = { schema2: { us: [], cpu: [], kb: [] }, direct: { us: [], cpu: [], kb: [] }, staged: { us: [], cpu: [], kb: [] } };
  for (let r = 0; r < reps; r++) {
    for (const p of ['schema2', 'direct', 'staged'] as const) {
      const m = timed(p, base2, base3);
      got[p].us.push(m.us);
      got[p].cpu.push(m.cpu);
      got[p].kb.push(m.kb);
      console.log(`rep ${r + 1} ${p.padEnd(7)}: ${m.us.toFixed(1)} µs a row, CPU ${m.cpu.toFixed(1)} µs, ${m.kb.toFixed(2)} KB written a row`);
    }
    // the two schema-3 paths stored the same vectors
    t = performance.now();
    const a = EmbeddingCache.open(path.join(opts.dir, 'direct.sqlite'));
    const b = EmbeddingCache.open(path.join(opts.dir, 'staged.sqlite'));
    for (let s = 0; s < puts; s += 4096) {
      const keys = Array.from({ length: Math.min(4096, puts - s) }, (_, j) => keyOf(rows + s + j));
      const x = a.get(keys);
      const y = b.get(keys);
      keys.forEach((k, j) => {
        if (x[j] === undefined || y[j] === undefined || !bytesOf(x[j]!).equals(bytesOf(y[j]!))) throw new Error(`direct and staged differ at ${k}`);
      });
    }
    a.close();
    b.close();
  }
  console.log('');
  console.log(`median of ${reps} (µs a row wall / CPU µs a row / KB written a row):`);
  for (const p of ['schema2', 'direct', 'staged'] as const) {
    console.log(`  ${p.padEnd(7)}: ${median(got[p].us).toFixed(1)} / ${median(got[p].cpu).toFixed(1)} / ${median(got[p].kb).toFixed(2)}`);
  }
  console.log(`same vectors stored by direct and staged: yes; load after: ${load()}`);
  rmSync(opts.dir, { recursive: true, force: true });
}

main();
