/**
 * Warm embedding-cache reads (session 9, docs/scale.md "Warm cache reads"): the previous read path and the current
 * one side by side in one run, on the same file, and the parts of a read measured apart.
 *
 *   npm run bench:embed-cache -- [--n 200000] [--d 100] [--reps 3] [--dir /tmp/embed-cache-bench]
 *
 * Builds one cache of n vectors of d float32 (glove-100d's shape; keys as embedTexts makes them: a ~100-character
 * provider key, NUL, the SHA-256 hex of the text) in puts of 32 (embedTexts' default batch), then for each repetition
 * copies it twice and reads all n keys in text order (random with respect to key and rowid order, as a sweep asks):
 * - previous: the read path before session 9, replayed on a raw connection (frozen below): 500 keys a
 *   `SELECT ... WHERE key IN`, each row checked, then `UPDATE ... SET last_used WHERE key IN` for the chunk's hits,
 *   over the old LRU index `(last_used, key)`;
 * - current: `EmbeddingCache.visit` (src/embed/cache.ts): the same SELECTs and checks, the hits marked after all
 *   reads, in rowid order, in the narrow table lru.
 * Apart (once, on the current file): building the n keys (SHA-256 of each text), the SELECTs with their checks, and
 * the marking alone (previous: by key, 500 at a time, rows and index (last_used, key); current: the lru table by
 * rowid, sorted), and the one-time lru fill when the current code opens a file of the previous one.
 * Puts (the cold run's writes, which now also write lru): n/4 vectors in puts of 32 into an empty file, the previous
 * put path (frozen below, on the previous layout) against `EmbeddingCache.put`, `reps` times each.
 * Both paths must serve the same vectors (checked: the XOR of all served bits and the hit count agree).
 * Output: one line per measurement and the medians, µs per vector; load before and after.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Command } from 'commander';
import { EmbeddingCache, rowChecksum } from '../src/embed/cache.js';
import { schema2File, schema2Put } from './cache-schema2.js';

const opts = new Command()
  .name('bench:embed-cache')
  .option('--n <n>', 'vectors in the cache, all read', '200000')
  .option('--d <n>', 'dimensions', '100')
  .option('--reps <n>', 'repetitions of each read path (median reported)', '3')
  .option('--dir <path>', 'scratch folder (removed at the end)', '/tmp/embed-cache-bench')
  .parse()
  .opts<{ n: string; d: string; reps: string; dir: string }>();
const n = Number(opts.n);
const d = Number(opts.d);
const reps = Number(opts.reps);
if (!(n >= 1 && d >= 1 && reps >= 1)) throw new Error('--n, --d and --reps must be ≥ 1');

const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const usPer = (ms: number): string => ((ms * 1000) / n).toFixed(1);
const FILES = ['', '-wal', '-shm'];
/** Turns a current file into the previous layout: no lru table, the index (last_used, key). */
const PREVIOUS_LAYOUT = 'DROP TABLE IF EXISTS lru; CREATE INDEX IF NOT EXISTS embeddings_last_used ON embeddings (last_used, key)';

/** The read path before session 9 (src/embed/cache.ts at 66d338b, `visit`), minus the counters; frozen here. */
function previousVisit(db: Database.Database, keys: readonly string[], onFound: (i: number, vec: Float32Array) => void): number {
  let found = 0;
  db.transaction(() => {
    const now = Number((db.prepare("UPDATE meta SET value = value + 1 WHERE key = 'clock' RETURNING value").get() as { value: number }).value);
    const index = new Map<string, number[]>();
    keys.forEach((k, i) => {
      const list = index.get(k);
      if (list) list.push(i);
      else index.set(k, [i]);
    });
    const distinct = [...index.keys()];
    let scratch = new Float32Array(0);
    for (let s = 0; s < distinct.length; s += 500) {
      const part = distinct.slice(s, s + 500);
      const marks = part.map(() => '?').join(',');
      const rows = db.prepare(`SELECT key, vec, sum FROM embeddings WHERE key IN (${marks})`).all(...part) as { key: string; vec: Uint8Array; sum: number }[];
      const hitKeys: string[] = [];
      for (const r of rows) {
        const bytes = r.vec;
        if (bytes.byteLength % 4 !== 0 || rowChecksum(r.key, bytes) !== r.sum) continue;
        let vec: Float32Array;
        if (bytes.byteOffset % 4 === 0) vec = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
        else {
          if (scratch.length !== bytes.byteLength / 4) scratch = new Float32Array(bytes.byteLength / 4);
          new Uint8Array(scratch.buffer).set(bytes);
          vec = scratch;
        }
        let finite = true;
        for (let j = 0; j < vec.length; j++) if (!Number.isFinite(vec[j])) finite = false;
        if (!finite) continue;
        for (const i of index.get(r.key) ?? []) {
          onFound(i, vec);
          found++;
        }
        hitKeys.push(r.key);
      }
      if (hitKeys.length > 0) db.prepare(`UPDATE embeddings SET last_used = ? WHERE key IN (${hitKeys.map(() => '?').join(',')})`).run(now, ...hitKeys);
    }
  }).immediate();
  return found;
}

/** The put path before session 9 (src/embed/cache.ts at 66d338b, `put` without maxEntries), on the previous layout. */
function previousPut(db: Database.Database, entries: readonly (readonly [string, Float32Array])[]): void {
  db.transaction(() => {
    const now = Number((db.prepare("UPDATE meta SET value = value + 1 WHERE key = 'clock' RETURNING value").get() as { value: number }).value);
    const stmt = db.prepare(
      'INSERT INTO embeddings (key, vec, sum, last_used) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT (key) DO UPDATE SET vec = excluded.vec, sum = excluded.sum, last_used = excluded.last_used',
    );
    for (const [key, vec] of entries) {
      const bytes = Buffer.from(vec.buffer, vec.byteOffset, vec.byteLength);
      stmt.run(key, bytes, rowChecksum(key, bytes), now);
    }
  }).immediate();
}

/** A checksum of what a read served: XOR of every served word, and the count. */
function digestSink(): { onFound: (i: number, v: Float32Array) => void; result: () => string } {
  let x = 0;
  let count = 0;
  return {
    onFound: (i, v) => {
      const u = new Uint32Array(v.buffer, v.byteOffset, v.length);
      for (let j = 0; j < u.length; j++) x ^= (u[j] + i) | 0;
      count++;
    },
    result: () => `${count}:${x >>> 0}`,
  };
}

function fresh(name: string, from: string): string {
  const f = path.join(opts.dir, name);
  for (const s of FILES) rmSync(f + s, { force: true });
  copyFileSync(from, f);
  return f;
}

function main(): void {
  rmSync(opts.dir, { recursive: true, force: true });
  mkdirSync(opts.dir, { recursive: true });
  console.log(`n ${n}, d ${d}, reps ${reps}; load before: ${load()}`);
  const providerKey = `glove-100d|${JSON.stringify({ table: 'a'.repeat(64), tokenizer: 1, pooling: 'mean', normalize: true, prefix: '' })}`;
  const texts = Array.from({ length: n }, (_, i) => `text number ${i} of the bench corpus`);
  let t = performance.now();
  const keys = texts.map((s) => `${providerKey}\u0000${createHash('sha256').update(s, 'utf8').digest('hex')}`);
  const keyMs = performance.now() - t;

  const base = path.join(opts.dir, 'base.sqlite');
  // built in the schema-2 layout (session 12's schema 3 migrates it on open: the current paths read a migrated copy)
  const cache = schema2File(base);
  t = performance.now();
  let seed = 1;
  for (let s = 0; s < n; s += 32) {
    schema2Put(
      cache,
      keys.slice(s, s + 32).map((k) => {
        const v = new Float32Array(d);
        for (let j = 0; j < d; j++) v[j] = ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
        return [k, v] as const;
      }),
    );
  }
  cache.close();
  // fold the WAL into the file so that a copy of the file alone holds every row
  const raw = new Database(base);
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();
  console.log(`fill: ${((performance.now() - t) / 1000).toFixed(1)} s`);

  // the one-time lru fill when the current code opens a file made by the previous one
  let swapMs: number;
  {
    const f = fresh('swap.sqlite', base);
    const db = new Database(f);
    db.exec(PREVIOUS_LAYOUT);
    db.close();
    const t0 = performance.now();
    EmbeddingCache.open(f).close();
    swapMs = performance.now() - t0;
    for (const s of FILES) rmSync(f + s, { force: true });
  }

  const prevMs: number[] = [];
  const curMs: number[] = [];
  const served = new Set<string>();
  for (let r = 0; r < reps; r++) {
    {
      const f = fresh('previous.sqlite', base);
      const db = new Database(f);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('wal_autocheckpoint = 16384');
      db.exec(PREVIOUS_LAYOUT);
      const sink = digestSink();
      const t0 = performance.now();
      previousVisit(db, keys, sink.onFound);
      prevMs.push(performance.now() - t0);
      db.close();
      served.add(sink.result());
      console.log(`rep ${r + 1} previous: ${(prevMs[r] / 1000).toFixed(2)} s, ${usPer(prevMs[r])} µs/vector`);
    }
    {
      const f = fresh('current.sqlite', base);
      const c = EmbeddingCache.open(f); // migrates the schema-2 copy (not timed)
      const sink = digestSink();
      const t0 = performance.now();
      c.visit(keys, sink.onFound);
      curMs.push(performance.now() - t0);
      c.close();
      served.add(sink.result());
      console.log(`rep ${r + 1} current:  ${(curMs[r] / 1000).toFixed(2)} s, ${usPer(curMs[r])} µs/vector`);
    }
  }
  if (served.size !== 1 || !served.values().next().value!.startsWith(`${n}:`)) throw new Error(`the paths served different vectors: ${[...served].join(' ')}`);

  // the parts, apart
  const f = fresh('parts.sqlite', base);
  const db = new Database(f);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 16384');
  t = performance.now();
  const rowids: number[] = [];
  for (let s = 0; s < n; s += 500) {
    const part = keys.slice(s, s + 500);
    const rows = db.prepare(`SELECT rowid, key, vec, sum FROM embeddings WHERE key IN (${part.map(() => '?').join(',')})`).all(...part) as { rowid: number; key: string; vec: Uint8Array; sum: number }[];
    for (const x of rows) if (rowChecksum(x.key, x.vec) === x.sum) rowids.push(x.rowid);
  }
  const selectMs = performance.now() - t;
  const markByKey = (index: string, sql: string, ids: readonly (string | number)[]): number => {
    db.exec(index);
    const t0 = performance.now();
    db.transaction(() => {
      for (let s = 0; s < ids.length; s += 500) {
        const part = ids.slice(s, s + 500);
        db.prepare(`${sql} (${part.map(() => '?').join(',')})`).run(Date.now() % 1000000, ...part);
      }
    }).immediate();
    return performance.now() - t0;
  };
  // current first: the previous layout drops lru
  const markCurMs = markByKey(
    "SELECT 1", // the current layout (lru and its index) as the current code made it
    'UPDATE lru SET last_used = ? WHERE id IN',
    rowids.sort((a, b) => a - b),
  );
  const markPrevMs = markByKey(
    PREVIOUS_LAYOUT,
    'UPDATE embeddings SET last_used = ? WHERE key IN',
    keys,
  );
  db.close();

  // puts, previous and current, into empty files
  const nPut = Math.max(1, Math.floor(n / 4));
  const putVec = (i: number): Float32Array => new Float32Array(d).fill(i / nPut);
  const putPrevMs: number[] = [];
  const putCurMs: number[] = [];
  for (let r = 0; r < reps; r++) {
    const fp = path.join(opts.dir, 'put-previous.sqlite');
    for (const s of FILES) rmSync(fp + s, { force: true });
    const pdb = schema2File(fp);
    pdb.exec(PREVIOUS_LAYOUT);
    let t0 = performance.now();
    for (let s = 0; s < nPut; s += 32) previousPut(pdb, keys.slice(s, Math.min(nPut, s + 32)).map((k, j) => [k, putVec(s + j)] as const));
    putPrevMs.push(performance.now() - t0);
    pdb.close();
    const fc = path.join(opts.dir, 'put-current.sqlite');
    for (const s of FILES) rmSync(fc + s, { force: true });
    const c = EmbeddingCache.open(fc);
    t0 = performance.now();
    for (let s = 0; s < nPut; s += 32) c.put(keys.slice(s, Math.min(nPut, s + 32)).map((k, j) => [k, putVec(s + j)] as const));
    c.close(); // timed: it merges the puts still staged (schema 3, session 12)
    putCurMs.push(performance.now() - t0);
    console.log(`rep ${r + 1} puts: previous ${((putPrevMs[r] * 1000) / nPut).toFixed(1)}, current ${((putCurMs[r] * 1000) / nPut).toFixed(1)} µs/vector`);
  }

  console.log('');
  console.log(`median of ${reps}, all ${n} vectors read and checked (µs per vector):`);
  console.log(`  previous read path: ${usPer(median(prevMs))} (${(median(prevMs) / 1000).toFixed(2)} s)`);
  console.log(`  current read path:  ${usPer(median(curMs))} (${(median(curMs) / 1000).toFixed(2)} s)`);
  console.log(`  ratio previous / current: ${(median(prevMs) / median(curMs)).toFixed(2)}x; same vectors served: yes`);
  console.log('apart, once:');
  console.log(`  keys (SHA-256 of each text, hex, provider key): ${usPer(keyMs)}`);
  console.log(`  SELECT ... WHERE key IN (500), rows checked (CRC-32): ${usPer(selectMs)}`);
  console.log(`  marking, previous (by key, 500 a statement, index (last_used, key)): ${usPer(markPrevMs)}`);
  console.log(`  marking, current (table lru by rowid, sorted): ${usPer(markCurMs)}`);
  console.log(`  opening a file of the code before session 9 (migrated to the current schema, lru filled once): ${(swapMs / 1000).toFixed(2)} s`);
  console.log(`puts of 32 (${nPut} vectors, median of ${reps}), µs per vector: previous ${((median(putPrevMs) * 1000) / nPut).toFixed(1)}, current ${((median(putCurMs) * 1000) / nPut).toFixed(1)}`);
  console.log(`load after: ${load()}`);
  rmSync(opts.dir, { recursive: true, force: true });
}

main();
