/**
 * The evidence-level section of the reports (level: evidence): how each chunking's chunks cover the labelled
 * evidence spans, and chunk sizes compared at equal token budgets. Pure: reads only the SweepResult.
 */
import type { SweepResult } from '../types.js';
import { fmt3 } from './format.js';
import { maxOf } from '../bounded.js';

/** A table of display strings: a header and rows, with a caption. */
export interface TextTable {
  caption: string;
  header: string[];
  rows: string[][];
}

/** The evidence section: an explanation and two tables, or null when the sweep is not at evidence level. */
export interface EvidenceSection {
  intro: string;
  projection: TextTable;
  budget: TextTable;
}

interface ProjectionStatsLike {
  spans: number;
  spansWithNoRelevantChunk: number;
  meanChunksPerSpan: number;
  maxChunksPerSpan: number;
}

function fmt1(x: number | undefined): string {
  return typeof x === 'number' && Number.isFinite(x) ? x.toFixed(1) : '—';
}

/**
 * Builds the evidence section from a sweep at level `evidence`: projection statistics per chunking (from the
 * manifest) and, for every ok row at the primary k, span recall, evidence character recall, precision and IoU, the
 * mean number of tokens handed to a model, and evidence recall at each configured token budget.
 * @returns null when `result.level` is not `evidence`.
 */
export function evidenceSection(result: SweepResult): EvidenceSection | null {
  if (result.level !== 'evidence') return null;
  const ev = (result.manifest.evidence ?? {}) as {
    minOverlap?: number;
    budgets?: number[];
    projection?: Record<string, ProjectionStatsLike>;
  };
  const budgets = ev.budgets ?? [];
  const k = Number(result.primaryMetric.split('@')[1]);
  const projection: TextTable = {
    caption: `How the evidence spans project onto each chunking (a chunk is relevant to a span when their overlap covers at least ${ev.minOverlap ?? 0.5} of the span or of the chunk).`,
    header: ['chunking', 'spans', 'spans with no relevant chunk', 'relevant chunks per span (mean)', 'max'],
    rows: Object.entries(ev.projection ?? {}).map(([key, s]) => [
      key,
      String(s.spans),
      String(s.spansWithNoRelevantChunk),
      fmt1(s.meanChunksPerSpan),
      String(s.maxChunksPerSpan),
    ]),
  };
  const rows = result.configs
    .filter((c) => c.status === 'ok' && c.config.k === k)
    .map((c) => {
      const m = c.means;
      return [
        c.config.id,
        fmt3(m[`recall@${k}`]),
        fmt3(m[`evidence_recall@${k}`]),
        fmt3(m[`evidence_precision@${k}`]),
        fmt3(m[`evidence_iou@${k}`]),
        fmt1(m[`tokens@${k}`]),
        ...budgets.map((b) => fmt3(m[`evidence_recall@${b}t`])),
      ];
    });
  const budget: TextTable = {
    caption:
      `Rows at k = ${k}. span recall = share of evidence spans with a relevant chunk in the top k; evidence recall = share of ` +
      `evidence characters the top k covers; precision = share of retrieved characters that are evidence; tokens = what ` +
      `the top k hands to a model (mean). The last columns fill the token budget from the top of each ranking ` +
      `(at most ${maxOf(result.configs.map((c) => c.config.k))} chunks): the fair comparison across chunk sizes.`,
    header: [
      'configuration',
      `span recall@${k}`,
      `evidence recall@${k}`,
      `evidence precision@${k}`,
      `IoU@${k}`,
      `tokens@${k}`,
      ...budgets.map((b) => `evidence recall ≤ ${b} tokens`),
    ],
    rows,
  };
  const family = result.primaryMetric.split('@')[0];
  const caveat = ['recall', 'hit_rate'].includes(family)
    ? ''
    : ` Caution: the primary metric ${result.primaryMetric} counts relevant chunks, and how many chunks a passage is cut ` +
      `into depends on the chunk size, so it does not compare chunk sizes fairly; recall (spans found), hit rate and the ` +
      `budget columns below do.`;
  return {
    intro:
      'Scored at the evidence level: labels are the evidence passages themselves, projected onto every chunking, so chunk ' +
      'sizes are compared on equal terms. Whole documents trivially contain their evidence; compare chunk sizes by ' +
      'evidence recall at equal token budget, not by recall@k alone.' +
      caveat,
    projection,
    budget,
  };
}
