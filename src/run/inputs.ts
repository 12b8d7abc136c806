/**
 * The sweep's inputs that are not the dataset: the `retrievers:` modules (imported up front) and the `runs:` files
 * (read and checked against the dataset). Shared by `run` (src/run/sweep.ts) and `validate` (src/run/plan.ts), which
 * gives the same errors for the same input; split out of sweep.ts so that plan.ts and sweep.ts do not import each other.
 */
import { pathToFileURL } from 'node:url';
import { readFileSync, existsSync, statSync } from 'node:fs';
import type { ChunkingSpec, Hit, Question } from '../types.js';
import type { SweepConfig } from '../config/schema.js';
import type { RetrieverFactory } from '../retrieve/retriever.js';
import { readRun } from '../load/trec.js';
import { HarnessError, isHarnessError } from '../errors.js';
import { decodeRunIds } from './artifacts.js';
import type { IdLookup } from '../id-index.js';

/** A retriever passed to {@link runSweep} as an object (library use): the same contract as a `retrievers:` module. */
export interface RetrieverEntry {
  /** Configuration id part (`none.<name>.k5`): letters, digits, `_` and `-`. */
  name: string;
  /** Builds the retriever over one chunking's chunks. */
  factory: RetrieverFactory;
  /** Which chunks it receives: `none` (default, whole documents) or a chunking spec. */
  chunking?: 'none' | ChunkingSpec;
  /** Passed to the factory untouched; default `{}`. */
  options?: Record<string, unknown>;
  /** Per-search timeout in milliseconds; default 60,000. */
  timeoutMs?: number;
  /** `search` calls in flight at once; default 4. */
  concurrency?: number;
  /** A stable string that determines this retriever's results; when given, its rankings are checkpointed under it. */
  checkpointKey?: string;
}

/** An error's message, with its remedy when it is a HarnessError (a failed row then says what to fix). */
export function errorText(e: unknown): string {
  if (isHarnessError(e)) return e.remedy ? `${e.message} (remedy: ${e.remedy})` : e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

/** A short description of a value for error messages (`a function`, `an object with keys a, b`). */
export function describeShort(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (v === null) return 'null';
  if (typeof v === 'function') return 'a function';
  if (typeof v !== 'object') return `${typeof v} ${String(v)}`;
  return `an object with keys ${Object.keys(v as object).join(', ') || '(none)'}`;
}

/**
 * Imports every `retrievers:` module up front, so a missing module or one without a factory is the user's mistake
 * (exit 1, nothing run), not a failed row.
 * @throws HarnessError('CONFIG_INVALID') naming the entry's key, the path and the remedy.
 */
export async function loadRetrieverModules(config: SweepConfig, objects: Map<string, RetrieverEntry> = new Map()): Promise<Map<string, RetrieverFactory>> {
  const out = new Map<string, RetrieverFactory>();
  for (const [i, entry] of config.retrievers.entries()) {
    const obj = objects.get(entry.name);
    if (obj) {
      if (typeof obj.factory !== 'function')
        throw new HarnessError('CONFIG_INVALID', `retriever ${entry.name}: factory is ${describeShort(obj.factory)}, not a function`, {
          remedy: 'pass factory: async ({ documents, chunks, options, signal }) => ({ search(question, depth) { ... } })',
        });
      out.set(entry.name, obj.factory);
      continue;
    }
    const where = { path: `retrievers[${i}].module`, ...(config.configFile ? { file: config.configFile } : {}) };
    if (!existsSync(entry.module) || !statSync(entry.module).isFile())
      throw new HarnessError('CONFIG_INVALID', `retriever ${entry.name}: no module file at ${entry.module}`, {
        location: where,
        remedy: 'check the path in retrievers[].module (relative paths resolve against the config file\'s folder)',
      });
    let mod: { default?: unknown };
    try {
      mod = (await import(pathToFileURL(entry.module).href)) as { default?: unknown };
    } catch (e) {
      throw new HarnessError('CONFIG_INVALID', `retriever ${entry.name}: ${entry.module} could not be imported: ${errorText(e)}`, {
        location: where,
        remedy: 'fix the module (an ES module, .mjs or .js with "type": "module") so that node can import it',
        cause: e,
      });
    }
    if (typeof mod.default !== 'function')
      throw new HarnessError('CONFIG_INVALID', `retriever ${entry.name}: the default export of ${entry.module} is ${describeShort(mod.default)}, not a factory function`, {
        location: where,
        remedy: 'export default async function ({ documents, chunks, options, signal }) { return { async search(question, depth) { return [{ id, score }]; } }; }',
      });
    out.set(entry.name, mod.default as RetrieverFactory);
  }
  return out;
}

/** A run file's lists by question id, ready to be served by a {@link listRetriever}. */
export interface LoadedRun {
  name: string;
  path: string;
  lists: Map<string, Hit[]>;
}

/**
 * Reads every `runs:` file and checks it against the dataset: a qid that is not a scored question's, or a docno the
 * corpus lacks, is refused with file and line — unless `dataset.labels: keep`, under which unknown qids are ignored and
 * unknown docnos stay in the ranking as retrieved, unjudged documents (warned about).
 * @throws HarnessError('RUN_INVALID') with the file and the first offending line.
 */
export function loadRuns(config: SweepConfig, scored: Question[], docIds: Pick<IdLookup, 'has'>, warn: (m: string) => void): LoadedRun[] {
  const out: LoadedRun[] = [];
  const qids = new Set(scored.map((q) => q.id));
  const keep = config.dataset.labels === 'keep';
  for (const entry of config.runs) {
    // The tool's own exported runs percent-encode ids with whitespace or % (artifacts.ts trecId): read them back.
    const { run, decoded } = decodeRunIds(readRun(entry.path), qids, docIds);
    if (decoded > 0) warn(`run ${entry.name}: ${decoded} id(s) read as percent-encoded (the export's encoding: %20 for a space, %25 for %)`);
    const lines = readFileSync(entry.path, 'utf8').split('\n');
    const lineOf = (pred: (f: string[]) => boolean) => lines.findIndex((l) => pred(l.trim().split(/\s+/))) + 1;
    const unknownQ = [...run.keys()].filter((q) => !qids.has(q));
    const unknownD = new Set<string>();
    for (const entries of run.values()) for (const e of entries) if (!docIds.has(e.docno)) unknownD.add(e.docno);
    if (!keep && unknownQ.length > 0) {
      const line = lineOf((f) => f[0] === unknownQ[0]);
      throw new HarnessError('RUN_INVALID', `run ${entry.name}: question id ${JSON.stringify(unknownQ[0])} is not a scored question of the dataset (${unknownQ.length} unknown qid(s) in all)`, {
        location: { file: entry.path, line },
        remedy: 'use the dataset\'s question ids in the run, or set dataset.labels: keep to ignore unknown qids',
      });
    }
    if (!keep && unknownD.size > 0) {
      const first = [...unknownD][0];
      const line = lineOf((f) => f[2] === first);
      throw new HarnessError('RUN_INVALID', `run ${entry.name}: docno ${JSON.stringify(first)} is not a document of the dataset (${unknownD.size} unknown docno(s) in all)`, {
        location: { file: entry.path, line },
        remedy: 'use the dataset\'s document ids, or set dataset.labels: keep to score unknown docnos as unjudged',
      });
    }
    if (unknownQ.length > 0) warn(`run ${entry.name}: ${unknownQ.length} question id(s) not in the dataset are ignored (dataset.labels: keep)`);
    if (unknownD.size > 0) warn(`run ${entry.name}: ${unknownD.size} docno(s) not in the corpus are kept as unjudged documents (dataset.labels: keep)`);
    const missing = scored.filter((q) => !run.has(q.id)).length;
    if (missing > 0) warn(`run ${entry.name}: ${missing} scored question(s) have no line in the run; they score 0 (trec_eval -c)`);
    const lists = new Map<string, Hit[]>();
    for (const [q, entries] of run) {
      if (!qids.has(q)) continue;
      // trec_eval keeps one line per (qid, docno); a repeated docno keeps its best score.
      const best = new Map<string, number>();
      for (const e of entries) best.set(e.docno, Math.max(best.get(e.docno) ?? -Infinity, e.score));
      lists.set(q, [...best].map(([id, score]) => ({ id, score })));
    }
    out.push({ name: entry.name, path: entry.path, lists });
  }
  return out;
}

