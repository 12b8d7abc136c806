/**
 * `retrieval-sweep evaluate`: score a TREC run file against a qrels file, trec_eval style, with the project's
 * measure names and edge-case policy (src/score/evaluate.ts). Returns the text to print; never prints or exits
 * (src/cli/main.ts does both).
 */
import { HarnessError } from '../errors.js';
import { readQrels, readRun } from '../load/trec.js';
import { evaluate, resolveThreshold } from '../score/evaluate.js';
import { condensedMeasure, formatMeasure, measuresAtK, parseMeasure, type Measure, type MeasureFamily } from '../score/measures.js';

/** Options of the evaluate command, as the CLI parser hands them over. */
export interface EvaluateCommandOptions {
  /** Path of the qrels file (`qid 0 docno grade`). */
  qrels: string;
  /** Path of the run file (`qid Q0 docno rank score tag`). */
  run: string;
  /**
   * Measure names, canonical (`ndcg@10`) or ir_measures / ranx / trec_eval aliases (`nDCG@10`, `P_5`); output uses
   * the canonical names and a measure named twice (`P@5`, `precision@5`) is scored once. An entry may hold several
   * separated by commas. Default:
   * {@link DEFAULT_EVALUATE_MEASURES}.
   */
  measures?: string[];
  /** Also print one row per question and measure. Default false. */
  perQuery?: boolean;
  /** Print JSON `{"mean", "per_query", "excluded", "ignored", "warnings"}` instead of rows. Default false. */
  json?: boolean;
  /** Minimum relevant grade, integer ≥ 1, default 1. */
  relevanceThreshold?: number;
  /**
   * trec_eval `-J`: every measure is also computed on condensed lists (unjudged documents removed from the ranking
   * first), printed as `<family>_condensed[@k]` right after the measure itself (`bpref`, then `bpref_condensed`).
   * `judged@k` has no condensed form and is printed once. Default false.
   */
  condensed?: boolean;
}

const DEFAULT_FAMILIES: readonly MeasureFamily[] = ['hit_rate', 'recall', 'precision', 'mrr', 'ndcg', 'map'];

/** hit_rate, recall, precision, mrr, ndcg, map at 1, 3, 5, 10, then r_precision. */
export const DEFAULT_EVALUATE_MEASURES: readonly string[] = Object.freeze([
  ...[1, 3, 5, 10].flatMap((k) => measuresAtK(k, DEFAULT_FAMILIES)).map(formatMeasure),
  'r_precision',
]);

/**
 * Runs the evaluate command.
 * stdout: rows `measure<TAB>all<TAB>value` (value with 4 decimals, as trec_eval prints), preceded with `--per-query`
 * by rows `measure<TAB>qid<TAB>value` per scored question (order of `perQuery`); with `json`, one JSON object (full
 * precision) `{"mean": {...}, "per_query": {qid: {...}}, "excluded": [...], "ignored": [...], "warnings": [...]}`.
 * stderr: how many questions were scored, excluded questions (no grade ≥ threshold), ignored run questions and
 * warnings, one per line.
 * @throws HarnessError `QRELS_INVALID` / `RUN_INVALID` (unreadable or bad file, with file and line; `QRELS_INVALID`
 *   also when no question can be scored),
 *   `MEASURE_UNKNOWN` (bad measure name), `USAGE` (bad threshold).
 */
export function runEvaluateCommand(opts: EvaluateCommandOptions): { stdout: string; stderr: string } {
  const threshold = resolveThreshold({ relevanceThreshold: opts.relevanceThreshold });
  const names = (opts.measures ?? DEFAULT_EVALUATE_MEASURES)
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const measures: Measure[] = [];
  const seen = new Set<string>();
  for (const n of names) {
    const m = parseMeasure(n);
    const canonical = formatMeasure(m);
    if (seen.has(canonical)) continue;
    seen.add(canonical);
    measures.push(m);
  }
  if (measures.length === 0) measures.push(...DEFAULT_EVALUATE_MEASURES.map(parseMeasure));
  if (opts.condensed) {
    const given = measures.splice(0);
    for (const m of given) {
      measures.push(m);
      const c = condensedMeasure(m);
      if (c === null || m.condensed === true) continue;
      const name = formatMeasure(c);
      if (seen.has(name)) continue;
      seen.add(name);
      measures.push(c);
    }
  }

  const qrels = readQrels(opts.qrels);
  const run = readRun(opts.run);
  const result = evaluate(qrels, run, measures, { relevanceThreshold: threshold });
  const measureNames = measures.map(formatMeasure);

  const err: string[] = [];
  const scored = Object.keys(result.perQuery).length;
  // Issue 24: a mean over no question is no result (an empty qrels file, a wrong threshold, disjoint question ids).
  if (scored === 0)
    throw new HarnessError(
      'QRELS_INVALID',
      `${opts.qrels}: no question could be scored (${qrels.size} question(s) in the qrels, ${result.excluded.length} with no judgement of grade >= ${threshold}, ${result.ignored.length} run question(s) not in the qrels)`,
      {
        location: { file: opts.qrels },
        remedy: 'pass the qrels that belong to this run, with at least one judgement at or above --threshold',
      },
    );
  err.push(`scored ${scored} question(s) of ${qrels.size} in ${opts.qrels}`);
  if (result.excluded.length > 0) {
    err.push(
      `excluded ${result.excluded.length} question(s) with no judgement of grade >= ${threshold} (not in the means): ` +
        result.excluded.join(', '),
    );
  }
  if (result.ignored.length > 0) {
    err.push(`ignored ${result.ignored.length} run question(s) not in the qrels: ${result.ignored.join(', ')}`);
  }
  for (const w of result.warnings) err.push(`warning: ${w}`);
  const stderr = `${err.join('\n')}\n`;

  if (opts.json) {
    const out = {
      mean: result.mean,
      per_query: result.perQuery,
      excluded: result.excluded,
      ignored: result.ignored,
      warnings: result.warnings,
    };
    return { stdout: `${JSON.stringify(out, null, 2)}\n`, stderr };
  }

  const rows: string[] = [];
  if (opts.perQuery) {
    for (const [qid, values] of Object.entries(result.perQuery)) {
      for (const name of measureNames) rows.push(`${name}\t${qid}\t${values[name].toFixed(4)}`);
    }
  }
  for (const name of measureNames) {
    if (name in result.mean) rows.push(`${name}\tall\t${result.mean[name].toFixed(4)}`);
  }
  return { stdout: rows.length > 0 ? `${rows.join('\n')}\n` : '', stderr };
}
