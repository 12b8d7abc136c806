/**
 * `report.md`: the decision report as Markdown. Numbers are rounded to 3 decimals for reading (the matrix files keep
 * full precision). Every question text and document id is escaped ({@link escapeMd}). Pure.
 */

import { labelSourcesSentence } from './labels.js';
import { evidenceSection } from './evidence.js';
import type { ConfigResult, SweepResult } from '../types.js';
import type { Analysis } from './analyze.js';
import { clip, escapeMd, fmt3, fmtCI, fmtP, fmtSigned, fmtSigned1, fmtSignedCI, fmtTime } from './format.js';
import { kCurveAdvice, kCurveRows, selectionParagraph } from './verdicts.js';
import { clearlyFaster, fmtQueryMs } from './timing.js';
import { ROW_FAMILIES, isRelevant, manifestValue, relevanceThreshold, rerankKey, retrieverLabel } from './metrics.js';
import { appendAll } from '../bounded.js';

const code = (s: string): string => `\`${s.replace(/`/g, "'")}\``;

function mdTable(header: string[], rows: string[][]): string[] {
  const align = header.map((_, i) => (i === 0 ? '---' : '---'));
  return [`| ${header.join(' | ')} |`, `| ${align.join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

/**
 * Rows ordered for the full matrix: candidate rows (the primary metric's k) first by the primary metric descending,
 * then the other ok rows by the primary family at their own k descending, then failed rows; ties keep grid order.
 */
export function matrixOrder(result: SweepResult, analysis: Analysis): number[] {
  const fam = analysis.primaryFamily;
  const val = (r: ConfigResult): number => r.means[`${fam}@${r.config.k}`] ?? -Infinity;
  const group = (i: number): number =>
    result.configs[i].status !== 'ok' ? 2 : analysis.rows[i]?.candidate ? 0 : 1;
  return result.configs
    .map((_, i) => i)
    .sort((a, b) => group(a) - group(b) || val(result.configs[b]) - val(result.configs[a]) || a - b);
}

/** A one-line description of the dataset and run from the manifest (fields are optional). */
export function runSummary(result: SweepResult, analysis: Analysis): string {
  const ds = manifestValue(result, ['dataset']) as Record<string, unknown> | undefined;
  const name = typeof ds?.name === 'string' ? ds.name : undefined;
  const fp = typeof ds?.fingerprint === 'string' ? ds.fingerprint.slice(0, 12) : undefined;
  const docs = typeof ds?.docs === 'number' ? ds.docs : undefined;
  const failed = analysis.failed.length;
  const parts = [
    name ? `dataset ${name}${fp ? ` (fingerprint ${fp})` : ''}` : undefined,
    docs !== undefined ? `${docs} documents` : undefined,
    `${analysis.questions} judged questions${result.excluded.length ? ` (${result.excluded.length} left out)` : ''}`,
    `${result.configs.length} configurations${failed ? ` (${failed} failed)` : ''}`,
    `${result.level}-level labels`,
  ].filter((p): p is string => p !== undefined);
  return parts.join(', ');
}

/** How {@link recommendationText} marks up configuration ids and escapes free text. */
export interface TextStyle {
  id: (configId: string) => string;
  text: (plain: string) => string;
}

/** Plain text (terminal). */
export const PLAIN: TextStyle = { id: (s) => s, text: (s) => s };

/**
 * The recommendation sentences, shared by report.md, report.html and the terminal summary. Line 0 is the headline: the
 * best row with its interval, or, when the questions cannot tell the rows apart (`analysis.evidence.enough` false:
 * fewer than `minQuestions` judged questions, or a minimum detectable difference above a tenth of the metric's range),
 * that there is not enough evidence to choose and why. Line 1 states that the primary metric and k were declared
 * before the run. Then the tier-1 sentence (never "a defensible choice" without enough evidence), the rows in tier 1
 * whose difference interval excludes 0 (not tied with the best, whatever the test says), the fastest tier-1 row
 * when it is clearly faster than the best, and, when the rows have judged@k, the unjudged warning and the bounds
 * sentence (report/unjudged.ts).
 */
export function recommendationText(result: SweepResult, analysis: Analysis, style: TextStyle = PLAIN): string[] {
  // Only names that come from the user's config or data go through style.text; the fixed wording and numbers are
  // safe in Markdown, HTML and plain text as they are.
  const t = style.text;
  const pm = t(analysis.primaryMetric);
  const declared = `The primary metric and k were declared before the run: ${pm}${analysis.primaryK !== null ? ` (k = ${analysis.primaryK})` : ''}.`;
  if (!analysis.best) return [`No configuration can be recommended: no ok row has ${pm}.`, declared];
  const b = result.configs[analysis.best.index];
  const enough = analysis.evidence.enough;
  const top =
    `${style.id(b.config.id)} (${t(retrieverLabel(b))}, chunking ${t(b.config.chunkingKey)}, k = ${b.config.k}) ` +
    `has the highest ${pm}: ${fmt3(analysis.best.mean)} (95% CI ${fmtCI(analysis.best.low, analysis.best.high)}) over ${analysis.questions} questions.`;
  const lines = [
    enough
      ? `Recommended: ${top}`
      : `Not enough evidence to choose a configuration: ${t(analysis.evidence.reason ?? '')}. Highest so far: ${top}`,
    declared,
  ];
  // Only settled verdicts are stated (report/analyze.ts, score/sequential.ts); the unsettled ones are named as such.
  const tier1Others = analysis.comparisons.filter((c) => c.tierDecided && c.tier === 1);
  const clean = tier1Others.filter((c) => c.intervalDecided && !c.excludesZero);
  const conflicting = tier1Others.filter((c) => c.intervalDecided && c.excludesZero);
  const openInterval = tier1Others.filter((c) => !c.intervalDecided);
  const openTier = analysis.comparisons.filter((c) => !c.tierDecided);
  const ci = `${fmtLevel(analysis.comparisonLevel)} difference interval`;
  const ids = (cs: readonly { id: string }[]): string => `${cs.slice(0, 5).map((c) => style.id(c.id)).join(', ')}${cs.length > 5 ? ', …' : ''}`;
  if (analysis.comparisons.length > 0) {
    const test = `paired permutation test, Holm-corrected, α = ${analysis.alpha}`;
    if (tier1Others.length === 0 && openTier.length === 0)
      lines.push(`Every other configuration at k = ${analysis.primaryK} is significantly worse (${test}).`);
    else if (tier1Others.length === 0)
      lines.push(`No other configuration at k = ${analysis.primaryK} is shown to be as good (${test}).`);
    else if (!enough)
      lines.push(
        `${tier1Others.length} other configuration(s) at k = ${analysis.primaryK} are not significantly worse (tier 1; ${test}), ` +
          'but with these questions that says little: tier 1 here means "not told apart", not "as good". Label more questions before choosing.',
      );
    else
      lines.push(
        `${tier1Others.length} other configuration(s) at k = ${analysis.primaryK} are not significantly worse (tier 1; ${test})` +
          (clean.length > 0
            ? `; ${clean.length === tier1Others.length ? 'any of them' : `the ${clean.length} whose ${ci} includes 0`} is a defensible choice.`
            : '.'),
      );
    if (conflicting.length > 0)
      lines.push(
        `Of the tier-1 configurations, ${conflicting.length} (marked † in the tier-1 table) have a ${ci} that excludes 0, so they are not tied with the best ` +
          `(the test and the interval disagree; treat them as probably worse): ${ids(conflicting)}.`,
      );
    if (openInterval.length > 0)
      lines.push(
        `Whether the ${ci} excludes 0 is undecided at ${Math.max(...openInterval.map((c) => c.intervalResamples))} resamples for ${openInterval.length} tier-1 configuration(s) ` +
          `(an interval end within Monte Carlo error of 0), so they are not called a defensible choice: ${ids(openInterval)}.`,
      );
    if (openTier.length > 0)
      lines.push(
        `Undecided at ${Math.max(...openTier.map((c) => c.permutations))} resamples: ${openTier.length} configuration(s) whose p-value stays within ` +
          `Monte Carlo error of Holm's threshold, so they are in neither tier: ${ids(openTier)}.`,
      );
    const tier1Rows = analysis.tier1.map((id) => result.configs.find((c) => c.config.id === id)!);
    const fastest = tier1Rows.reduce((a, c) => (c.meanQueryMs < a.meanQueryMs ? c : a), tier1Rows[0]);
    // Only when the gap is real: at least 2x faster, half a millisecond, and outside both rows' timing resolution.
    if (fastest.config.id !== b.config.id && clearlyFaster(fastest, b))
      lines.push(
        `The fastest tier-1 configuration is ${style.id(fastest.config.id)} (${fmtQueryMs(fastest)} ms per query vs ${fmtQueryMs(b)} ms).`,
      );
  }
  // Unjudged documents (issue 20): the warning, then the bounds sentence. Ids in them come from the config: t().
  const u = analysis.unjudged;
  if (u) {
    if (u.warning) lines.push(`Warning: ${t(u.warning)}`);
    if (u.bounds) lines.push(t(u.bounds.sentence));
  }
  return lines;
}

/**
 * The one line under the comparison tables that says how the difference intervals are adjusted and what † marks.
 */
export function intervalNote(analysis: Analysis): string {
  const m = analysis.comparisons.length;
  return (
    `Difference intervals are paired bootstrap intervals at ${fmtLevel(analysis.comparisonLevel)} = 1 − α/${m} (Bonferroni over the ${m} comparison(s)): ` +
    "simultaneous intervals, at least as wide as Holm's strictest step needs." +
    (analysis.comparisons.some(isDagger)
      ? ' † marks a tier-1 row whose interval excludes 0: the test and the interval disagree, so it is not tied with the best.'
      : '') +
    ' MC error: the Monte Carlo standard error of the p-value (√(p(1 − p)/R) over R sign patterns; "exact" when all 2^n were enumerated) and of each interval end; ' +
    `a verdict within 3 Monte Carlo errors of its threshold is resampled further, up to ${analysis.maxResamples} resamples (statistics.maxResamples).`
  );
}

/** A tier-1 row whose difference interval (settled) excludes 0: marked † wherever tier 1 is listed. */
export function isDagger(c: Analysis['comparisons'][number]): boolean {
  return c.tierDecided && c.tier === 1 && c.intervalDecided && c.excludesZero;
}

/** The MC error cell of a comparison: `exact` or `±p` for the p-value, then `±low, ±high` for the interval ends. */
export function fmtMcError(c: Analysis['comparisons'][number]): string {
  const e = (x: number): string => (x === 0 ? '0' : x < 0.0001 ? '<0.0001' : x.toFixed(4));
  return `${c.exact ? 'p exact' : `p ±${e(c.pMcError)} (R ${c.permutations})`}; ends ±${e(c.lowMcError)}, ±${e(c.highMcError)} (R ${c.intervalResamples})`;
}

/** `95%`, `97.5%`, `99.17%`: a confidence level as a percentage with at most two decimals. */
export function fmtLevel(level: number): string {
  return `${Number((level * 100).toFixed(2))}%`;
}

/**
 * Renders report.md: recommendation, tier-1 table, comparisons, the full matrix sorted by the primary metric,
 * model comparison, segments, cutoffs, questions every configuration missed, failed rows, warnings and method.
 */
export function renderMarkdown(result: SweepResult, analysis: Analysis): string {
  const pm = analysis.primaryMetric;
  const fam = analysis.primaryFamily;
  const out: string[] = [];
  const byId = new Map(result.configs.map((c) => [c.config.id, c]));
  out.push(`# Retrieval sweep report: ${escapeMd(result.name)}`, '');
  out.push(`${escapeMd(runSummary(result, analysis))}. Started ${escapeMd(result.createdAt)}.`, '');

  out.push('## Recommendation', '');
  out.push(recommendationText(result, analysis, { id: (s) => `**${code(s)}**`, text: escapeMd }).join(' '), '');
  if (analysis.mdd && analysis.mdd.value < 1)
    out.push(
      `With ${analysis.questions} questions, a paired comparison detects a difference of about ${fmt3(analysis.mdd.value)} in ${pm} ` +
        `(80% power, α = ${analysis.alpha}; normal approximation, ${escapeMd(analysis.mdd.basis)}). Smaller differences are not resolved.`,
      '',
    );

  // Tier 1 and comparisons; judged@k beside the primary metric (issue 20), ⚠ below unjudged.warnBelow.
  const jm = analysis.unjudged?.metric;
  const judgedCell = (v: number | undefined) => (typeof v === 'number' ? `${fmt3(v)}${v < analysis.unjudged!.warnBelow ? ' ⚠' : ''}` : '—');
  const compById = new Map(analysis.comparisons.map((c) => [c.id, c]));
  const compRow = (id: string): string[] => {
    const r = byId.get(id)!;
    const ra = analysis.rows[result.configs.indexOf(r)];
    const m = ra.metrics[pm];
    const c = compById.get(id);
    return [
      code(id),
      escapeMd(retrieverLabel(r)),
      code(r.config.chunkingKey),
      fmt3(m?.mean),
      fmtCI(m?.low, m?.high),
      ...(jm ? [judgedCell(r.means[jm])] : []),
      c ? fmtSigned(c.diff) : 'best',
      c ? `${fmtSignedCI(c.low, c.high)}${isDagger(c) ? ' †' : ''}` : '',
      c ? fmtP(c.pValue) : '',
      c ? fmtP(c.pHolm) : '',
      c ? fmtMcError(c) : '',
      fmtQueryMs(r),
    ];
  };
  const compHeader = ['configuration', 'retriever', 'chunking', pm, '95% CI', ...(jm ? [jm] : []), 'diff vs best', `diff ${fmtLevel(analysis.comparisonLevel)} CI`, 'p', 'p (Holm)', 'MC error', 'ms/query'];
  if (analysis.best) {
    out.push(`## Tier 1: not significantly worse than the best on ${pm}`, '');
    appendAll(out, mdTable(compHeader, analysis.tier1.map(compRow))).push('');
    if (analysis.comparisons.length > 0) out.push(intervalNote(analysis), '');
    const tier2 = analysis.comparisons.filter((c) => c.tierDecided && c.tier === 2);
    if (tier2.length > 0) {
      out.push(`## Tier 2: significantly worse than the best (Holm-adjusted p < ${analysis.alpha})`, '');
      appendAll(out, mdTable(compHeader, tier2.map((c) => compRow(c.id)))).push('');
    }
    if (analysis.undecided.length > 0) {
      out.push(`## Undecided at ${analysis.maxResamples} resamples`, '');
      out.push(
        "Their Holm decision stays within 3 Monte Carlo errors of the threshold after the bound on resampling (statistics.maxResamples), so they are in neither tier. Raise the bound or label more questions.",
        '',
      );
      out.push(...mdTable(compHeader, analysis.undecided.map(compRow)), '');
    }
  }

  out.push(...verdictSections(analysis));

  // Full matrix.
  out.push(
    `## Full matrix, sorted by ${fam} (rows at k = ${analysis.primaryK ?? '—'} first)`,
    '',
    `Each metric is at the row's own k. Tier applies to rows at k = ${analysis.primaryK ?? '—'} only.`,
    '',
  );
  const mHeader = ['configuration', 'status', 'tier', 'fusion', 'rerank', 'k', ...ROW_FAMILIES, `${fam} 95% CI`, 'build s', 'ms/query'];
  const mRows = matrixOrder(result, analysis).map((i) => {
    const r = result.configs[i];
    const ra = analysis.rows[i];
    const iv = ra?.metrics[`${fam}@${r.config.k}`];
    return [
      code(r.config.id),
      r.status,
      ra?.tier !== undefined ? String(ra.tier) : '',
      r.config.fusion ? code(r.config.fusion.key) : '',
      r.config.rerank ? code(rerankKey(r.config.rerank)!) : '',
      String(r.config.k),
      ...ROW_FAMILIES.map((f) => fmt3(r.means[`${f}@${r.config.k}`])),
      fmtCI(iv?.low, iv?.high),
      fmtTime(r.buildSeconds),
      fmtQueryMs(r),
    ];
  });
  appendAll(out, mdTable(mHeader, mRows)).push('');

  // Models.
  if (analysis.models.rows.length > 0) {
    out.push('## Embedding models', '');
    out.push(
      `Each model's best semantic configuration at k = ${analysis.primaryK}. Cosine scores of different models live on different scales.`,
      '',
    );
    out.push(
      ...mdTable(
        ['model', 'configuration', analysis.models.metric, '95% CI', 'mean top-1 cosine'],
        analysis.models.rows.map((m) => [
          escapeMd(m.model),
          code(m.configId),
          fmt3(m.ndcg?.mean),
          fmtCI(m.ndcg?.low, m.ndcg?.high),
          fmt3(m.meanTop1Cosine),
        ]),
      ),
      '',
    );
    for (const n of analysis.models.notes) out.push(`- ${escapeMd(n)}`);
    if (analysis.models.notes.length) out.push('');
  }

  // Segments.
  const seg = analysis.segments;
  if (seg && seg.segments.length > 0) {
    out.push(`## Segments of ${code(seg.configId)}`, '');
    out.push(
      `${pm} over all ${seg.questions} questions: ${fmt3(seg.overall)}. A question counts for a folder when it has a relevant ` +
        'document under that top-level folder; points = (segment − overall) × 100, percent = (segment − overall) / overall. ' +
        "\"Best here\" is the candidate with the highest mean on the segment's questions; \"tier 1 here\" counts the candidates not " +
        `significantly worse than it on those questions (paired permutation test, Holm over the segment, α = ${analysis.alpha}).`,
      '',
    );
    out.push(
      ...mdTable(
        ['segment', 'kind', 'questions', pm, '95% CI', 'vs overall (points)', 'vs overall (%)', 'best here', `its ${pm}`, 'tier 1 here', 'recommended in it'],
        seg.segments.map((s) => [
          escapeMd(s.name),
          s.kind,
          String(s.questions),
          fmt3(s.value),
          fmtCI(s.low, s.high),
          fmtSigned1(s.diffPoints),
          s.diffPercent === null ? '—' : `${fmtSigned1(s.diffPercent)}%`,
          code(s.best.id),
          fmt3(s.best.value),
          String(s.tier1.length),
          s.recommendedInTier1 === null ? `undecided at ${s.resamples} resamples` : s.recommendedInTier1 ? 'yes' : '**no**',
        ]),
      ),
      '',
    );
    for (const line of segmentNotes(analysis)) out.push(`- ${escapeMd(line)}`);
    if (segmentNotes(analysis).length > 0) out.push('');
  }

  // Fusion.
  if (analysis.fusion) {
    const fv = analysis.fusion;
    out.push(`## Fusion: ${pm} against the semantic weight`, '');
    out.push(
      `Each hybrid row against its two parents (the keyword and the semantic row with the same chunking, embedding, rerank and k): ` +
        `paired permutation test against each, Holm over the ${fv.tests} tests of this view. x is alpha (convex) or the weight (weighted RRF); — is plain RRF.`,
      '',
    );
    for (const g of fv.groups) {
      out.push(escapeMd(g.sentence), '');
      out.push(
        ...mdTable(
          ['fusion', 'method', 'x', pm, '95% CI', 'tier', 'vs keyword', 'p (Holm)', 'vs semantic', 'p (Holm)', 'beats both'],
          [
            ...(g.keyword ? [[code(g.keyword.id), 'keyword parent', '—', fmt3(g.keyword.value.mean), fmtCI(g.keyword.value.low, g.keyword.value.high), '', '', '', '', '', '']] : []),
            ...(g.semantic ? [[code(g.semantic.id), 'semantic parent', '—', fmt3(g.semantic.value.mean), fmtCI(g.semantic.value.low, g.semantic.value.high), '', '', '', '', '', '']] : []),
            ...g.points.map((p) => [
              code(p.fusion),
              p.method,
              p.x === null ? '—' : String(p.x),
              fmt3(p.value.mean),
              fmtCI(p.value.low, p.value.high),
              p.tier === undefined ? '' : String(p.tier),
              fmtSigned(p.vsKeyword?.diff),
              fmtP(p.vsKeyword?.pHolm),
              fmtSigned(p.vsSemantic?.diff),
              fmtP(p.vsSemantic?.pHolm),
              p.beatsBoth ? 'yes' : 'no',
            ]),
          ],
        ),
        '',
      );
    }
  }

  // Cutoffs.
  if (analysis.cutoffs.length > 0) {
    out.push('## Similarity cutoffs', '');
    out.push(
      'For each model, the semantic row with the largest k (at its best chunking) and the cosine scores of its retrieved results. ' +
        '"Score ≥ threshold" keeps a result; precision = kept results whose document is relevant / kept results; recall = relevant ' +
        'documents with a kept result / relevant documents retrieved anywhere in the lists (not all labelled documents: a cutoff cannot ' +
        'bring back what was never retrieved).',
      '',
    );
    out.push(
      ...mdTable(
        ['model', 'row', 'results', 'relevant', 'score range', 'F1-best threshold', 'P', 'R', 'F1', `at ${analysis.fixedCutoff}: P`, 'R', 'R change', 'P change'],
        analysis.cutoffs.map((c) => [
          escapeMd(c.model),
          code(c.configId),
          String(c.results),
          String(c.relevantResults),
          `${fmt3(c.minScore)} – ${fmt3(c.maxScore)}`,
          fmt3(c.best.threshold),
          fmt3(c.best.precision),
          fmt3(c.best.recall),
          fmt3(c.best.f1),
          fmt3(c.fixed.precision),
          fmt3(c.fixed.recall),
          fmtSigned(c.fixed.recallChange),
          fmtSigned(c.fixed.precisionChange),
        ]),
      ),
      '',
    );
    for (const c of analysis.cutoffs) {
      if (c.fixed.kept === 0)
        out.push(
          `- ${escapeMd(c.model)}: a fixed ${analysis.fixedCutoff} cutoff keeps nothing (the highest score is ${fmt3(c.maxScore)}), ` +
            `losing all the recall (${fmt3(c.best.recall)}) of the F1-best threshold ${fmt3(c.best.threshold)}.`,
        );
      else if (c.fixed.recallChange !== null && c.fixed.recallChange < 0)
        out.push(
          `- ${escapeMd(c.model)}: a fixed ${analysis.fixedCutoff} cutoff keeps ${c.fixed.kept} of ${c.results} results and loses ` +
            `${fmt3(-c.fixed.recallChange)} recall against the F1-best threshold ${fmt3(c.best.threshold)}.`,
        );
      else if (c.fixed.precisionChange !== null && c.fixed.precisionChange < 0)
        out.push(
          `- ${escapeMd(c.model)}: a fixed ${analysis.fixedCutoff} cutoff keeps ${c.fixed.kept} of ${c.results} results; it loses ` +
            `${fmt3(-c.fixed.precisionChange)} precision against the F1-best threshold ${fmt3(c.best.threshold)}.`,
        );
    }
    out.push('');
    for (const c of analysis.cutoffs) {
      out.push(`Score distribution, ${escapeMd(c.model)}:`, '');
      const h = c.histogram;
      out.push(
        ...mdTable(
          ['score', 'relevant', 'not relevant'],
          h.relevant.map((_, i) => [`${fmt3(h.edges[i])} – ${fmt3(h.edges[i + 1])}`, String(h.relevant[i]), String(h.nonRelevant[i])]),
        ),
        '',
      );
    }
  }

  // Evidence level: projection and equal token budgets.
  const ev = evidenceSection(result);
  if (ev) {
    out.push('## Evidence level: chunk sizes at equal token budget', '', escapeMd(ev.intro), '');
    out.push(escapeMd(ev.projection.caption), '', ...mdTable(ev.projection.header.map(escapeMd), ev.projection.rows.map((r) => r.map(escapeMd))), '');
    out.push(escapeMd(ev.budget.caption), '', ...mdTable(ev.budget.header.map(escapeMd), ev.budget.rows.map((r) => r.map((c, j) => (j === 0 ? code(c) : escapeMd(c))))), '');
  }

  // Missed questions.
  out.push(`## Questions every configuration missed (${analysis.missedByAll.length})`, '');
  if (analysis.missedByAll.length === 0) out.push('None: every question had a relevant result in the top k of some configuration.', '');
  else {
    const threshold = relevanceThreshold(result);
    const qById = new Map(result.questions.map((q) => [q.id, q]));
    const shown = analysis.missedByAll.slice(0, 100);
    out.push(
      ...mdTable(
        ['question', 'text', 'relevant documents'],
        shown.map((id) => {
          const q = qById.get(id)!;
          const rel = Object.keys(q.relevant).filter((d) => isRelevant(q, d, threshold));
          return [escapeMd(id), escapeMd(clip(q.text, 160)), escapeMd(clip(rel.join(', '), 160))];
        }),
      ),
      '',
    );
    if (analysis.missedByAll.length > shown.length) out.push(`… and ${analysis.missedByAll.length - shown.length} more.`, '');
  }

  // Failed.
  out.push(`## Failed configurations (${analysis.failed.length})`, '');
  if (analysis.failed.length === 0) out.push('None.', '');
  else appendAll(out, mdTable(['configuration', 'error'], analysis.failed.map((f) => [code(f.id), escapeMd(clip(f.error, 400))]))).push('');

  // Warnings.
  out.push(`## Warnings (${analysis.warnings.length})`, '');
  if (analysis.warnings.length === 0) out.push('None.', '');
  else appendAll(out, analysis.warnings.map((w) => `- ${escapeMd(w)}`)).push('');

  out.push('## Method', '');
  appendAll(out, methodLines(result, analysis).map((l) => `- ${escapeMd(l)}`)).push('');
  return out.join('\n');
}

/** report.md's selection (winner's curse) and choosing-k sections; empty when neither applies. */
function verdictSections(analysis: Analysis): string[] {
  const out: string[] = [];
  const style = { id: (s: string) => code(s), text: escapeMd };
  const sel = selectionParagraph(analysis, style);
  if (sel.length > 0) out.push("## Selection: the winner's curse", '', ...sel, '');
  const curves = kCurveRows(analysis, style);
  if (curves.length > 0) {
    out.push('## Choosing k', '');
    out.push(
      `Recall and hit rate of the recommended configuration and each tier-1 one at every swept k. The recall difference with the largest k is a ` +
        `paired sign-flip test, Holm over the smaller ks, α = ${analysis.alpha}; "tied" means not significantly less.`,
      '',
    );
    for (const a of kCurveAdvice(analysis, style)) out.push(a, '');
    for (const c of curves) out.push(c.sentence, '', ...mdTable(c.header, c.rows), '');
  }
  return out;
}

/**
 * One line per segment where the recommended configuration is not in the segment's tier 1, or is not the segment's
 * best: which configuration is best there and by how much (the paraphrase questions: BM25 0.459, hybrid use-lite 0.629).
 */
export function segmentNotes(analysis: Analysis): string[] {
  const seg = analysis.segments;
  if (!seg) return [];
  const out: string[] = [];
  for (const s of seg.segments) {
    if (s.best.id === seg.configId) continue;
    const what = `${s.kind} ${s.name} (${s.questions} question(s))`;
    // Equal means are a tie, never "highest" (the segment's best is then only the earlier grid row).
    if (s.best.value === s.value) {
      out.push(`${what}: ${s.best.id} and ${seg.configId} tie at ${fmt3(s.value)}.`);
      continue;
    }
    out.push(
      s.recommendedInTier1 === null
        ? `${what}: ${s.best.id} scores highest (${fmt3(s.best.value)} vs ${fmt3(s.value)} for ${seg.configId}); whether the recommended configuration is in this segment's tier 1 is undecided at ${s.resamples} resamples.`
        : s.recommendedInTier1
          ? `${what}: ${s.best.id} scores highest (${fmt3(s.best.value)} vs ${fmt3(s.value)} for ${seg.configId}), but the recommended configuration is in this segment's tier 1.`
          : `${what}: ${s.best.id} scores ${fmt3(s.best.value)} against ${fmt3(s.value)} for ${seg.configId}, which is significantly worse here; ` +
            `this segment's tier 1 has ${s.tier1.length} configuration(s).`,
    );
  }
  return out;
}

/** The method notes: statistics, metric conventions and the effective settings from the manifest. */
export function methodLines(result: SweepResult, analysis: Analysis): string[] {
  const lines = [
    `Primary metric ${analysis.primaryMetric}, declared in the config before the run; candidates are the rows at k = ${analysis.primaryK ?? '—'}.`,
    `Intervals: ${Math.round(analysis.level * 100)}% percentile bootstrap over questions (Efron & Tibshirani 1993), ${analysis.resamples} resamples, seed ${analysis.seed}; the same resampled questions are used for every row, so differences are paired.`,
    `Tiers: each candidate against the best by a two-sided paired sign-flip permutation test (Smucker, Allan & Carterette 2007; ` +
      `${analysis.questions <= 16 ? 'exact, all 2^n sign patterns' : `${analysis.permutationResamples} random sign patterns, seed ${analysis.seed + 1}, p = (count + 1)/(resamples + 1)`}), ` +
      `Holm-corrected over the ${analysis.comparisons.length} comparison(s) (Holm 1979); tier 1 when the adjusted p ≥ ${analysis.alpha}; ` +
      `difference intervals at ${fmtLevel(analysis.comparisonLevel)} (Bonferroni, 1 − α/m).`,
    `Monte Carlo verdicts (tiers, †, segments' tier 1, "beats both parents") are settled before they are stated: a p-value or an interval's tail share whose ` +
      `Wilson interval (z = 3) still holds its threshold is resampled further from the same seeded stream, doubling, up to ${analysis.maxResamples} resamples ` +
      `(statistics.maxResamples; sequential Monte Carlo after Gandy 2009); one still unsettled is reported as "undecided at N resamples"` +
      (analysis.undecided.length > 0 ? ` (${analysis.undecided.length} here)` : ' (none here)') +
      '. MC error columns give √(p(1 − p)/R) for each p-value and the order-statistic error of each interval end.',
    `Enough evidence to choose needs at least ${analysis.minQuestions} judged questions (statistics.minQuestions) and a minimum detectable difference of at most a tenth of the metric's range: ` +
      (analysis.evidence.enough ? 'met.' : `not met (${analysis.evidence.reason}).`),
    result.level === 'evidence'
      ? 'Evidence level: each question\'s evidence spans are projected onto every chunking (a chunk is relevant when the overlap covers the manifest\'s evidence.minOverlap share of the span or of the chunk; its grade is the highest of those spans); recall@k = share of spans with a relevant chunk in the top k; the other measures follow trec_eval on chunk ids with the ideal ordering from this chunking\'s relevant chunks; questions with no evidence span are left out of every mean.'
      : result.level === 'chunk'
        ? 'Chunk level: labels name chunk ids of the one chunking; measures follow trec_eval on chunk ids (ndcg with linear gain and 1/log2(rank + 1) discount, ideal from all labelled chunks); questions with no chunk label are left out of every mean.'
        : 'Metrics follow trec_eval: ndcg uses linear gain (grade) with 1/log2(rank + 1) discount and the ideal ordering of all labelled relevant documents; ndcg_exp uses gain 2^grade − 1; a document retrieved twice is credited once, at its first rank; questions with no relevant label are left out of every mean.',
    `Relevant means grade ≥ ${relevanceThreshold(result)}.`,
  ];
  const tie = manifestValue(result, ['tieRule']);
  if (typeof tie === 'string') lines.push(`Tie rule: ${tie}.`);
  const labels = labelSourcesSentence(result);
  if (labels !== null) lines.push(labels);
  const bm25 = (manifestValue(result, ['bm25']) ?? manifestValue(result, ['config', 'bm25'])) as Record<string, unknown> | undefined;
  if (bm25 && typeof bm25 === 'object') lines.push(`BM25: k1 = ${String(bm25.k1)}, b = ${String(bm25.b)}.`);
  // Only when the sweep had hybrid rows (the manifest's `hybrid` is null otherwise; older manifests: any hybrid row).
  const hybridRows = result.configs.some((c) => c.config.mode === 'hybrid');
  const hybrid = (manifestValue(result, ['hybrid']) ?? (hybridRows ? manifestValue(result, ['config', 'hybrid']) : undefined)) as
    | Record<string, unknown>
    | undefined;
  if (hybrid && typeof hybrid === 'object') {
    const fusion = Array.isArray(hybrid.fusion) ? (hybrid.fusion as { method?: string }[]) : [{ method: 'rrf' }];
    const methods = [...new Set(fusion.map((f) => f.method ?? 'rrf'))];
    const parts: string[] = [];
    if (methods.includes('rrf')) parts.push(`reciprocal rank fusion (Cormack et al. 2009; plain with constant ${String(hybrid.rrfK)} unless a setting names its own)`);
    if (methods.includes('convex')) parts.push('convex combination of normalised scores (docs/fusion.md)');
    lines.push(`Hybrid: ${parts.join(' and ')}, ${fusion.length} setting(s), each list ${String(hybrid.depth)} deep.`);
  }
  const chunking = manifestValue(result, ['chunking']) as { tokenizer?: unknown; chunkings?: unknown } | undefined;
  if (chunking && Array.isArray(chunking.chunkings)) {
    const parts = (chunking.chunkings as Record<string, unknown>[]).map((c) => {
      const mt = typeof c.mean_tokens === 'number' ? `, mean ${Math.round(c.mean_tokens)} tokens` : '';
      return `${String(c.key)} → ${String(c.chunks)} chunks${mt}${c.error ? ` (failed: ${String(c.error)})` : ''}`;
    });
    lines.push(`Chunking${typeof chunking.tokenizer === 'string' ? ` (sizes in ${chunking.tokenizer} tokens)` : ''}: ${parts.join('; ')}.`);
  }
  const emb = manifestValue(result, ['embeddings']);
  if (Array.isArray(emb))
    for (const e of emb) {
      if (!e || typeof e !== 'object') continue;
      const o = e as Record<string, unknown>;
      const d = (o.describe && typeof o.describe === 'object' ? o.describe : {}) as Record<string, unknown>;
      const pick = (k: string): unknown => d[k] ?? o[k];
      const bits: string[] = [];
      const what = pick('model') ?? pick('package');
      if (typeof what === 'string' && what !== o.label) bits.push(what);
      if (typeof pick('dims') === 'number') bits.push(`${String(pick('dims'))} dimensions`);
      for (const [k, name] of [
        ['queryPrefix', 'query prefix'],
        ['documentPrefix', 'document prefix'],
      ] as const)
        if (typeof pick(k) === 'string') bits.push(`${name} ${JSON.stringify(pick(k))}`);
      if (typeof o.truncated === 'number' && o.truncated > 0) bits.push(`${o.truncated} texts truncated to the model's input limit`);
      // Inference time and, for a server model, the tokens and requests it cost (from the responses' usage).
      if (o.embed_seconds_by_chunking && typeof o.embed_seconds_by_chunking === 'object')
        bits.push(
          `document embedding time shared out per chunking by chunk texts (each chunking's rows carry its share in build s): ` +
            Object.entries(o.embed_seconds_by_chunking as Record<string, number>)
              .map(([ck, sec]) => `${ck} ${Number(sec).toFixed(1)} s`)
              .join(', '),
        );
      if (typeof o.embed_seconds === 'number')
        bits.push(
          `inference ${o.embed_seconds.toFixed(1)} s for ${typeof o.cache_misses === 'number' ? o.cache_misses : '?'} texts embedded (${typeof o.cache_hits === 'number' ? o.cache_hits : '?'} from the cache)`,
        );
      else if (o.from_checkpoint === true) bits.push('every ranking taken from checkpoints, nothing embedded');
      const server = (o.server && typeof o.server === 'object' ? o.server : undefined) as Record<string, unknown> | undefined;
      if (server) {
        const n = (k: string) => (typeof server[k] === 'number' ? (server[k] as number) : 0);
        bits.push(
          `${n('promptTokens')} tokens in ${n('requests')} requests, ${n('retries')} retries (${n('retryWaitSeconds').toFixed(1)} s waiting)`,
        );
      }
      if (typeof o.error === 'string') bits.push(`failed: ${o.error}`);
      lines.push(`Embedding ${String(o.label ?? o.model ?? 'model')}${bits.length ? `: ${bits.join(', ')}` : ''}.`);
    }
  const total = manifestValue(result, ['timings', 'total_seconds']);
  if (typeof total === 'number') lines.push(`Sweep time ${total.toFixed(1)} s.`);
  return lines;
}
