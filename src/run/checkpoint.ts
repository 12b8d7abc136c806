/**
 * Checkpoints: finished rankings kept under `<cacheDir>/checkpoints/`, so a re-run after a kill, Ctrl-C or an
 * out-of-memory stop repeats no finished stage (issue "nothing lost").
 *
 * A checkpoint holds one ranking unit: the lists of every scored question (in question order) at some depth, plus the
 * timings measured when it was computed. It is keyed by the SHA-256 of everything that determines the lists: the
 * checkpoint format, the dataset fingerprint, the scored question ids, the chunking, and the unit's own parameters
 * (BM25 k1/b and analyser; the embedding model's cache keys; fusion; the retriever module's file hash and options; the
 * run file's hash; the reranker's cache key and depth). A stored ranking at depth D serves any depth ≤ D (every depth is
 * a prefix). Files are written to a temporary name and renamed, so a kill never leaves a half-written checkpoint; an
 * unreadable checkpoint is ignored (and recomputed), never trusted.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { Hit } from '../types.js';

/** Bumped whenever what a ranking unit computes changes meaning. */
export const CHECKPOINT_FORMAT = 1;

/** A stored ranking unit. */
export interface Checkpoint {
  /** One list per scored question, in question order, each cut to `depth`. */
  lists: Hit[][];
  depth: number;
  buildSeconds: number;
  queryMs: number;
  /** Anything else the unit reports (manifest details). */
  info?: Record<string, unknown>;
}

/** A folder of checkpoints. `enabled: false` makes every lookup miss and every write a no-op. */
export class CheckpointStore {
  readonly dir: string;
  readonly enabled: boolean;
  /** Keys served from disk during this run, and keys written. */
  readonly hits: string[] = [];
  readonly writes: string[] = [];

  constructor(cacheDir: string, enabled = true) {
    this.dir = path.join(path.resolve(cacheDir), 'checkpoints');
    this.enabled = enabled;
  }

  /** The key of a unit: sha256 over the JSON of its parts (object keys sorted). */
  static key(parts: Record<string, unknown>): string {
    return createHash('sha256')
      .update(JSON.stringify(sortKeys({ format: CHECKPOINT_FORMAT, ...parts })))
      .digest('hex');
  }

  /** The stored unit for `key` when it exists, is readable and reaches `depth`; otherwise undefined. */
  get(key: string, depth: number): Checkpoint | undefined {
    if (!this.enabled) return undefined;
    const file = path.join(this.dir, `${key}.json`);
    if (!existsSync(file)) return undefined;
    try {
      const c = JSON.parse(readFileSync(file, 'utf8')) as { lists: [string, number][][]; depth: number; buildSeconds: number; queryMs: number; info?: Record<string, unknown> };
      if (!Array.isArray(c.lists) || typeof c.depth !== 'number' || c.depth < depth) return undefined;
      this.hits.push(key);
      return {
        lists: c.lists.map((l) => l.slice(0, depth).map(([id, score]) => ({ id, score }))),
        depth,
        buildSeconds: c.buildSeconds,
        queryMs: c.queryMs,
        ...(c.info ? { info: c.info } : {}),
      };
    } catch {
      try {
        unlinkSync(file);
      } catch {
        /* another run may have replaced it */
      }
      return undefined;
    }
  }

  /** Stores a unit atomically (temporary file, then rename). Scores round-trip exactly through JSON. */
  put(key: string, c: Checkpoint): void {
    if (!this.enabled) return;
    mkdirSync(this.dir, { recursive: true });
    const file = path.join(this.dir, `${key}.json`);
    const tmp = `${file}.${process.pid}.tmp`;
    const body = JSON.stringify({
      depth: c.depth,
      buildSeconds: c.buildSeconds,
      queryMs: c.queryMs,
      ...(c.info ? { info: c.info } : {}),
      lists: c.lists.map((l) => l.map((h) => [h.id, h.score])),
    });
    writeFileSync(tmp, body);
    renameSync(tmp, file);
    this.writes.push(key);
  }
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .sort()
        .map((k) => [k, sortKeys(o[k])]),
    );
  }
  return v;
}

/** SHA-256 hex of a file's bytes (module files, run files), or of the empty string when it cannot be read. */
export function fileHash(file: string): string {
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return createHash('sha256').update('').digest('hex');
  }
}
