/**
 * `retrieval-sweep doctor CACHEDIR [--fix]` (issue 24 §1): verifies a whole cache folder with the same checks a sweep
 * applies on every read, and says what it would drop: ranking and chunking checkpoints (key, content hash, list
 * shape and order), the embedding cache's rows (CRC-32 per row, finite values), GloVe binary tables (content hash)
 * and temporaries of dead runs (in checkpoints/, glove-100d/, lancedb/, bm25-runs/ and vectors/). With `fix`, drops them (a sweep then
 * recomputes them); without, changes nothing.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
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

/** What {@link doctorCache} checked and found. */
export interface DoctorReport {
  dir: string;
  /** Entries checked: checkpoint files, vector rows, tables. */
  checked: { checkpoints: number; chunkings: number; vectors: number; tables: number };
  findings: DoctorFinding[];
  /** True when the findings were dropped (`fix`). */
  fixed: boolean;
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
  return { dir: abs, checked, findings, fixed: Boolean(opts.fix) };
}

/** The doctor's text: what was checked, then one line per finding (`would drop` / `dropped`), `\n` line ends. */
export function formatDoctor(r: DoctorReport): string {
  const c = r.checked;
  const lines = [
    `${r.dir}: ${c.checkpoints} ranking checkpoints, ${c.chunkings} chunking checkpoints, ${c.vectors} cached vectors, ${c.tables} GloVe tables checked; ` +
      `${r.findings.length} ${r.fixed ? 'dropped' : 'to drop'}${r.findings.length > 0 && !r.fixed ? ' (run again with --fix to drop them; a sweep recomputes them)' : ''}`,
  ];
  for (const f of r.findings) lines.push(`  ${r.fixed ? 'dropped' : 'would drop'} ${f.what}: ${f.reason}`);
  return `${lines.join('\n')}\n`;
}
