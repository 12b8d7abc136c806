/**
 * Small helpers the report modules share for reading a {@link SweepResult}: metric names, row values, manifest fields.
 * Pure; no disk, no clock.
 */

import type { ConfigResult, Question, SweepResult } from '../types.js';

/** The metric families a matrix row reports, in column order. */
export const ROW_FAMILIES = ['hit_rate', 'recall', 'precision', 'mrr', 'ndcg', 'ndcg_exp', 'map'] as const;
export type RowFamily = (typeof ROW_FAMILIES)[number];

/**
 * Splits a canonical measure name `family@k` into its parts; a name without `@` (e.g. `r_precision`) has k = null.
 * Does not validate the family (that is `score/measures.ts`'s job); the report shows whatever the sweep scored.
 */
export function splitMeasure(name: string): { family: string; k: number | null } {
  const at = name.lastIndexOf('@');
  if (at < 0) return { family: name, k: null };
  const k = Number(name.slice(at + 1));
  return { family: name.slice(0, at), k: Number.isInteger(k) && k >= 1 ? k : null };
}

/** The canonical name of `family` at the row's own k (`ndcg` on a k5 row → `ndcg@5`). */
export function atRowK(family: string, row: ConfigResult): string {
  return `${family}@${row.config.k}`;
}

/**
 * Orders metric names for display: the row families in {@link ROW_FAMILIES} order first, then any other name in
 * code-unit order. Does not change its input.
 */
export function sortMetricNames(names: readonly string[]): string[] {
  const rank = (n: string): number => {
    const i = (ROW_FAMILIES as readonly string[]).indexOf(splitMeasure(n).family);
    return i < 0 ? ROW_FAMILIES.length : i;
  };
  return [...names].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** A nested manifest value by path (`['hybrid', 'rrfK']`), or undefined when any step is missing. */
export function manifestValue(result: SweepResult, path: readonly string[]): unknown {
  let v: unknown = result.manifest;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

/**
 * The grade at or above which a label counts as relevant: `manifest.relevanceThreshold` when it is a number ≥ 1,
 * else 1 (the project default, trec_eval's).
 */
export function relevanceThreshold(result: SweepResult): number {
  const t = manifestValue(result, ['relevanceThreshold']);
  return typeof t === 'number' && Number.isFinite(t) && t >= 1 ? t : 1;
}

/** True when `docId` is judged relevant for `q` (grade ≥ threshold). */
export function isRelevant(q: Question, docId: string, threshold: number): boolean {
  const g = q.relevant[docId];
  return typeof g === 'number' && g >= threshold;
}

/**
 * The top-level folder of a document id: the part before the first `/`, or `(root)` when the id has no folder
 * (BEIR ids, files at the top of the docs folder).
 */
export function topFolder(docId: string): string {
  const i = docId.indexOf('/');
  return i <= 0 ? '(root)' : docId.slice(0, i);
}

/**
 * Sort key for chunking keys: `none` first, then `cs<size>-ov<overlap>` by size then overlap, then anything else in
 * code-unit order.
 */
export function compareChunkingKeys(a: string, b: string): number {
  const key = (s: string): [number, number, number, string] => {
    if (s === 'none') return [0, 0, 0, s];
    const m = /^cs(\d+)-ov(\d+)$/.exec(s);
    if (m) return [1, Number(m[1]), Number(m[2]), s];
    return [2, 0, 0, s];
  };
  const x = key(a);
  const y = key(b);
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
  return x[3] < y[3] ? -1 : x[3] > y[3] ? 1 : 0;
}

/**
 * Display label of a row's retriever: the id's retriever part (`keyword`, `semantic`, `hybrid`, `hybrid-cvx-mm-a0.5`,
 * an external name; the mode when absent), then the embedding, then `rerank <label>-d<depth>`:
 * `semantic use-lite`, `hybrid-rrf-k10 use-lite rerank bge-d50`.
 */
export function retrieverLabel(row: ConfigResult): string {
  const c = row.config;
  return [c.retriever ?? c.mode, c.embedding, c.rerank ? `rerank ${rerankKey(c.rerank)}` : null].filter(Boolean).join(' ');
}

/** `<label>-d<depth>` of a row's rerank stage (`bge-base-d50`), or null when the row is not reranked. */
export function rerankKey(r: ConfigResult['config']['rerank'] | undefined): string | null {
  return r ? `${r.label}-d${r.depth}` : null;
}
