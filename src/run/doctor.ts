/**
 * `retrieval-sweep doctor CACHEDIR [--fix]` (issue 24 §1): verifies a whole cache folder with the same checks a sweep
 * applies on every read, and says what it would drop: ranking and chunking checkpoints (key, content hash, list
 * shape and order), the embedding cache's rows (CRC-32 per row, finite values), GloVe binary tables (content hash)
 * and temporaries of dead runs (in checkpoints/, glove-100d/, lancedb/, bm25-runs/ and vectors/). With `fix`, drops them (a sweep then
 * recomputes them); without, changes nothing it would drop. It also lists the SQLite logs (`-wal`, `-shm`) found beside
 * the caches' databases, which a run killed with a cache open leaves: committed rows, never dropped; the next run merges
 * them (src/store/wal.ts), and so does this check's own open of the embedding cache when no other process has it open.
 */
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { EmbeddingCache } from '../embed/cache.js';
import { readGloveBinary } from '../embed/glove.js';
import { HarnessError } from '../errors.js';
import { processAlive } from '../store/temp.js';
import { CheckpointStore } from './checkpoint.js';

/** One entry doctor would drop (or dropped). */
export interface DoctorFinding {
  /** The file, or `<embeddings.sqlite> row <key>` for a vector. */
  what: string;
  reason: string;
}

/** A SQLite log beside one of the caches' databases (see the module doc). */
export interface DoctorLog {
  /** The log file: `<cacheDir>/<name>.sqlite-wal` or `-shm`. */
  file: string;
  /** Its size in bytes when the check began. */
  bytes: number;
  /** The database it belongs to. */
  database: string;
  /** True when it was gone when the check ended (merged by this check's open and close of the database). */
  merged: boolean;
}

/** The SQLite databases of a cache folder whose leftover logs doctor lists (src/run/sweep.ts, src/cli/llm.ts). */
export const CACHE_DATABASES = ['embeddings.sqlite', 'rerank.sqlite', 'chat.sqlite'] as const;

/** What {@link doctorCache} checked and found. */
export interface DoctorReport {
  dir: string;
  /** Entries checked: checkpoint files, vector rows, tables. */
  checked: { checkpoints: number; chunkings: number; vectors: number; tables: number };
  findings: DoctorFinding[];
  /** True when the findings were dropped (`fix`). */
  fixed: boolean;
  /** SQLite logs (`-wal`, `-shm`) found beside the caches' databases, in {@link CACHE_DATABASES} order; not findings. */
  logs: DoctorLog[];
}

/**
 * Verifies the cache folder `dir` (a sweep's `cacheDir`). Reads only, unless `fix`. Missing parts are skipped.
 * @throws HarnessError('CACHE_FAILED') when `dir` does not exist or is not a folder, and the embedding cache's own
 *   `CACHE_FAILED` when its file cannot be opened.
 */
export function doctorCache(dir: string, opts: { fix?: boolean } = {}): DoctorReport {
  const abs = path.resolve(dir);
  let top: string[];
  try {
    top = readdirSync(abs);
  } catch (e) {
    throw new HarnessError('CACHE_FAILED', `${abs} is not a cache folder that can be read (${(e as Error).message})`, {
      location: { file: abs },
      remedy: 'pass the cacheDir of your config (default .cache/retrieval-sweep)',
      cause: e,
    });
  }
  const findings: DoctorFinding[] = [];
  const drop: string[] = [];
  // Before anything opens a database (opening and closing one merges its log).
  const logs: DoctorLog[] = [];
  for (const name of CACHE_DATABASES) {
    for (const suffix of ['-wal', '-shm']) {
      const file = path.join(abs, name + suffix);
      let bytes: number;
      try {
        bytes = statSync(file).size;
      } catch {
        continue;
      }
      logs.push({ file, bytes, database: path.join(abs, name), merged: false });
    }
  }
  const checked = { checkpoints: 0, chunkings: 0, vectors: 0, tables: 0 };
  const temporaries = (folder: string) => {
    if (!existsSync(folder)) return;
    for (const name of readdirSync(folder)) {
      const m = /\.tmp-(\d+)-(\d+)$/.exec(name);
      if (m && !processAlive(Number(m[1]))) {
        findings.push({ what: path.join(folder, name), reason: `temporary of a run that is gone (pid ${m[1]})` });
        drop.push(path.join(folder, name));
      }
    }
  };

  const store = new CheckpointStore(abs, false);
  const cpDir = path.join(abs, 'checkpoints');
  if (existsSync(cpDir)) {
    for (const name of readdirSync(cpDir).sort()) {
      const file = path.join(cpDir, name);
      let problem: string | null = null;
      if (name.endsWith('.json')) {
        checked.checkpoints++;
        problem = store.inspect(file);
      } else if (name.endsWith('.chunks')) {
        checked.chunkings++;
        problem = store.inspectChunks(file);
      } else continue;
      if (problem) {
        findings.push({ what: file, reason: problem });
        drop.push(file);
      }
    }
    temporaries(cpDir);
  }

  const gloveDir = path.join(abs, 'glove-100d');
  if (existsSync(gloveDir)) {
    for (const name of readdirSync(gloveDir).sort()) {
      if (!name.endsWith('.f32bin')) continue;
      checked.tables++;
      const file = path.join(gloveDir, name);
      try {
        readGloveBinary(file);
      } catch (e) {
        findings.push({ what: file, reason: (e as Error).message });
        drop.push(file);
      }
    }
    temporaries(gloveDir);
  }

  // LanceDB tables' sidecars are written through temporaries too (src/retrieve/lancedb.ts); so are the dense vector
  // files of a model past its limits.memory share (src/run/units/embedding.ts), which live only while a run does.
  temporaries(path.join(abs, 'lancedb'));
  // A BM25 build's sorted runs (src/retrieve/bm25-spill.ts), left by a killed sweep.
  temporaries(path.join(abs, 'bm25-runs'));
  temporaries(path.join(abs, 'vectors'));

  const dbFile = path.join(abs, 'embeddings.sqlite');
  if (top.includes('embeddings.sqlite')) {
    const cache = EmbeddingCache.open(dbFile);
    try {
      const v = cache.verifyAll();
      checked.vectors = v.rows;
      for (const b of v.bad) findings.push({ what: `${dbFile} row ${b.key.replaceAll('\u0000', '|')}`, reason: b.reason });
      if (opts.fix && v.bad.length > 0) cache.remove(v.bad.map((b) => b.key));
    } finally {
      cache.close();
    }
  }
  if (opts.fix) for (const f of drop) rmSync(f, { recursive: true, force: true });
  for (const l of logs) l.merged = !existsSync(l.file);
  return { dir: abs, checked, findings, fixed: Boolean(opts.fix), logs };
}

/** Bytes as MB with one decimal (1 MB = 1,048,576 bytes), or bytes below 0.1 MB. */
function size(bytes: number): string {
  return bytes < 104858 ? `${bytes} bytes` : `${(bytes / 1048576).toFixed(1)} MB`;
}

/**
 * The doctor's text: what was checked, then one line per finding (`would drop` / `dropped`), then one line per
 * leftover SQLite log; `\n` line ends.
 */
export function formatDoctor(r: DoctorReport): string {
  const c = r.checked;
  const lines = [
    `${r.dir}: ${c.checkpoints} ranking checkpoints, ${c.chunkings} chunking checkpoints, ${c.vectors} cached vectors, ${c.tables} GloVe tables checked; ` +
      `${r.findings.length} ${r.fixed ? 'dropped' : 'to drop'}${r.findings.length > 0 && !r.fixed ? ' (run again with --fix to drop them; a sweep recomputes them)' : ''}`,
  ];
  for (const f of r.findings) lines.push(`  ${r.fixed ? 'dropped' : 'would drop'} ${f.what}: ${f.reason}`);
  for (const l of r.logs) {
    lines.push(
      `  SQLite log ${l.file} (${size(l.bytes)}): left by a run that ended with ${path.basename(l.database)} open (committed rows, kept); ` +
        (l.merged ? `merged into ${l.database} by this check` : `the next run merges it into ${l.database}`),
    );
  }
  return `${lines.join('\n')}\n`;
}
