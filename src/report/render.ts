/**
 * Renders every report file from one finished sweep and its {@link Analysis}. Pure: returns strings, writes nothing
 * (`run/` writes the files).
 */

import type { SweepResult } from '../types.js';
import type { Analysis } from './analyze.js';
import { renderHtml } from './html.js';
import { renderMarkdown } from './markdown.js';
import { renderMatrixCsv, renderMatrixJson } from './matrix.js';
import { renderTerminal } from './terminal.js';

/** The rendered files, keyed by file name, plus the terminal summary (printed, not written). */
export interface RenderedReports {
  /** One row per configuration, full-precision numbers; see `matrix.ts` for the columns. */
  'matrix.csv': string;
  /** `{"primary_metric", "rows": [...]}`, the CSV columns plus `metrics` and `ci` keyed by canonical name. */
  'matrix.json': string;
  /** The decision report in Markdown, numbers rounded to 3 decimals. */
  'report.md': string;
  /** One self-contained offline HTML file with charts, a sortable matrix and a per-question drill-down. */
  'report.html': string;
  /** At most 25 lines: the tier-1 rows with intervals and the recommendation. */
  terminal: string;
}

/**
 * Renders all report outputs.
 * @param result the sweep (with or without `withStatistics` applied; intervals and tiers come from `analysis`).
 * @param analysis `analyze(result)`; its rows must be in `result.configs` order.
 */
export function renderReports(result: SweepResult, analysis: Analysis): RenderedReports {
  return {
    'matrix.csv': renderMatrixCsv(result, analysis),
    'matrix.json': renderMatrixJson(result, analysis),
    'report.md': renderMarkdown(result, analysis),
    'report.html': renderHtml(result, analysis),
    terminal: renderTerminal(result, analysis),
  };
}
