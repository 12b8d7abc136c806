/**
 * `report.html`: one self-contained file that works offline. No external script, style, font or image; charts are
 * inline SVG from `svg.ts`; the matrix is a sortable table; the per-question drill-down data is embedded once as JSON
 * in a `<script type="application/json">` block (every `<`, `>` and `&` escaped as `\u00XX`) and rendered on demand
 * with `textContent` only, never `innerHTML`. A Content-Security-Policy allows no network access at all and only the
 * one inline script, by its sha256 hash, so even a missed escape could not run injected script. Pure (hashing is not I/O).
 */

import { createHash } from 'node:crypto';
import type { ConfigResult, Mode, SweepResult } from '../types.js';
import type { Analysis } from './analyze.js';
import { evidenceSection } from './evidence.js';
import { clip, escapeHtml as h, fmt3, fmtCI, fmtP, fmtSigned, fmtSigned1, fmtSignedCI, fmtTime, jsonForScript } from './format.js';
import { fmtLevel, fmtMcError, intervalNote, isDagger, matrixOrder, methodLines, recommendationText, runSummary, segmentNotes } from './markdown.js';
import { ROW_FAMILIES, compareChunkingKeys, isRelevant, relevanceThreshold, rerankKey, retrieverLabel } from './metrics.js';
import { kCurveAdvice, kCurveRows, selectionParagraph } from './verdicts.js';
import { fmtQueryMs } from './timing.js';
import { SERIES_COLORS, heatmap, hbars, histogram, lineChart } from './svg.js';
import { maxOf, minOf } from '../bounded.js';

const STYLE = `
:root{--fg:#1d1d1f;--muted:#666;--line:#ddd;--accent:#0072B2;--bad:#b00020;--good:#1b7f3b}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);margin:0;background:#fafafa}
main{max-width:1280px;margin:0 auto;padding:16px 24px 64px;background:#fff}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid var(--line);padding:6px 0;z-index:2;font-size:13px}
nav a{margin-right:12px;color:var(--accent);text-decoration:none}
.muted{color:var(--muted)}.rec{background:#eef6fc;border-left:4px solid var(--accent);padding:8px 12px}
.warn{background:#fff6e5;border-left:4px solid #e69f00;padding:6px 12px;margin:4px 0}
table{border-collapse:collapse;margin:6px 0;font-size:12.5px}
th,td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:right;white-space:nowrap}
th:first-child,td:first-child,td.t,th.t{text-align:left}
th{background:#f3f3f3}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:after{content:" \\2195";color:#aaa;font-size:10px}
tr.tier1 td:first-child{border-left:3px solid var(--good)}tr.best{font-weight:600}tr.failed{color:var(--bad)}
.scroll{overflow-x:auto;max-width:100%}
table{display:block;overflow-x:auto;max-width:100%}
th:first-child,td:first-child{position:sticky;left:0;z-index:1;background:#fff}th:first-child{background:#f3f3f3}
tr.hit td:first-child,td.hit:first-child{background:#e3f4e8}
.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{background:#fff;border:1px solid #eee}
svg .ct{font-size:13px;font-weight:600}svg .tick{font-size:11px}svg .axt{font-size:11px;fill:#444}svg .cv{font-size:11px}svg .vl{paint-order:stroke;stroke:#fff;stroke-width:3px;font-weight:600}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f4f4f4;padding:0 3px;border-radius:3px}
.neg{color:var(--bad)}.pos{color:var(--good)}
#drill-controls{display:flex;gap:12px;align-items:flex-start;flex-wrap:wrap}
#drill-list{min-width:420px;max-width:100%}
#drill-detail td.t{white-space:normal}
.hit{background:#e3f4e8}.qtext{font-size:15px;margin:4px 0 8px;white-space:pre-wrap}
.chip{display:inline-block;border:1px solid var(--line);border-radius:10px;padding:0 6px;margin:1px 3px 1px 0;font-size:12px}
.chip.rel{border-color:var(--good);background:#e3f4e8}
`;

/**
 * Client script: sortable tables and the drill-down. Plain ES2017; builds the drill-down with createElement and
 * textContent only. Its sha256 goes into the Content-Security-Policy.
 */
const CLIENT_JS = `
(function(){
"use strict";
function sortTable(table, col, th){
  var tbody = table.tBodies[0]; if (!tbody) return;
  var dir = th.getAttribute("data-dir") === "desc" ? "asc" : "desc";
  var ths = table.tHead.rows[0].cells; for (var i = 0; i < ths.length; i++) ths[i].removeAttribute("data-dir");
  th.setAttribute("data-dir", dir);
  var rows = Array.prototype.slice.call(tbody.rows);
  var num = th.getAttribute("data-type") === "num";
  rows.sort(function(a, b){
    var x = a.cells[col], y = b.cells[col];
    var vx = x.hasAttribute("data-v") ? x.getAttribute("data-v") : x.textContent;
    var vy = y.hasAttribute("data-v") ? y.getAttribute("data-v") : y.textContent;
    var c;
    if (num) { var nx = vx === "" ? -Infinity : Number(vx), ny = vy === "" ? -Infinity : Number(vy); c = nx < ny ? -1 : nx > ny ? 1 : 0; }
    else c = vx < vy ? -1 : vx > vy ? 1 : 0;
    return dir === "asc" ? c : -c;
  });
  for (var j = 0; j < rows.length; j++) tbody.appendChild(rows[j]);
}
var tables = document.querySelectorAll("table.sortable");
for (var t = 0; t < tables.length; t++) (function(table){
  var ths = table.tHead.rows[0].cells;
  for (var i = 0; i < ths.length; i++) (function(i){ ths[i].addEventListener("click", function(){ sortTable(table, i, ths[i]); }); })(i);
})(tables[t]);

var dataEl = document.getElementById("report-data");
if (!dataEl) return;
var D = JSON.parse(dataEl.textContent);
var list = document.getElementById("drill-list"), filter = document.getElementById("drill-filter"),
    onlyMissed = document.getElementById("drill-missed"), detail = document.getElementById("drill-detail"),
    count = document.getElementById("drill-count");
function el(tag, text, cls){ var e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; }
function fmt(x, d){ return x === null || x === undefined ? "\\u2014" : Number(x).toFixed(d); }
function relMap(q){ var m = {}; for (var i = 0; i < q.rel.length; i++) m[q.rel[i][0]] = q.rel[i][1]; return m; }
function chunkName(docIdx, c){ return typeof c === "number" ? D.docs[docIdx] + "#" + c : c; }
function fill(){
  var f = filter.value.toLowerCase(), miss = onlyMissed.checked;
  while (list.firstChild) list.removeChild(list.firstChild);
  var n = 0;
  for (var i = 0; i < D.questions.length; i++){
    var q = D.questions[i];
    if (f && q.id.toLowerCase().indexOf(f) < 0 && q.text.toLowerCase().indexOf(f) < 0) continue;
    if (miss && !(D.runs.length && D.runs[0][i][0] === null)) continue;
    var label = q.id + " \\u2014 " + (q.text.length > 90 ? q.text.slice(0, 89) + "\\u2026" : q.text) + (q.missed ? "  [missed by all]" : "");
    var o = el("option", label); o.value = String(i); list.appendChild(o); n++;
  }
  count.textContent = n + " of " + D.questions.length + " questions";
  if (list.options.length) { list.selectedIndex = 0; show(Number(list.value)); } else { while (detail.firstChild) detail.removeChild(detail.firstChild); }
}
function show(i){
  var q = D.questions[i], rel = relMap(q);
  while (detail.firstChild) detail.removeChild(detail.firstChild);
  detail.appendChild(el("h3", "Question " + q.id + (q.missed ? " (no configuration found a relevant document)" : "")));
  detail.appendChild(el("div", q.text, "qtext"));
  if (q.tags.length) { var tg = el("div", "tags: "); for (var a = 0; a < q.tags.length; a++) tg.appendChild(el("span", q.tags[a], "chip")); detail.appendChild(tg); }
  var rd = el("div", "relevant documents: ");
  for (var r = 0; r < q.rel.length; r++) rd.appendChild(el("span", D.docs[q.rel[r][0]] + " (grade " + q.rel[r][1] + ")", "chip rel"));
  detail.appendChild(rd);
  var table = el("table"), head = el("tr");
  ["configuration", "tier", "first relevant rank", D.primary, "retrieved (rank. chunk, score)"].forEach(function(s, k){ var th = el("th", s); if (k === 0 || k === 4) th.className = "t"; head.appendChild(th); });
  var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
  var tb = el("tbody");
  for (var c = 0; c < D.configs.length; c++){
    var run = D.runs[c][i], tr = el("tr");
    if (c === 0) tr.className = "best";
    tr.appendChild(el("td", D.configs[c].id));
    tr.appendChild(el("td", D.configs[c].tier === null ? "" : D.configs[c].tier));
    tr.appendChild(el("td", run[0] === null ? "none" : run[0], run[0] === null ? "neg" : ""));
    tr.appendChild(el("td", fmt(run[1], 3)));
    var td = el("td", null, "t"), hits = run[2];
    for (var p = 0; p < hits.length; p += 3){
      var doc = hits[p], g = rel[doc];
      var s = el("span", ((p / 3) + 1) + ". " + chunkName(doc, hits[p + 1]) + " " + fmt(hits[p + 2], 4), g !== undefined && g >= D.threshold ? "chip rel" : "chip");
      td.appendChild(s);
    }
    if (!hits.length) td.appendChild(el("span", "nothing retrieved", "muted"));
    tr.appendChild(td); tb.appendChild(tr);
  }
  table.appendChild(tb);
  var wrap = el("div", null, "scroll"); wrap.appendChild(table); detail.appendChild(wrap);
}
filter.addEventListener("input", fill);
onlyMissed.addEventListener("change", fill);
list.addEventListener("change", function(){ show(Number(list.value)); });
fill();
})();
`;

/** The drill-down payload: candidate rows' retrieved lists for every question, with document ids interned. */
export function drillData(result: SweepResult, analysis: Analysis): unknown {
  const docs: string[] = [];
  const docIndex = new Map<string, number>();
  const intern = (d: string): number => {
    let i = docIndex.get(d);
    if (i === undefined) {
      i = docs.length;
      docs.push(d);
      docIndex.set(d, i);
    }
    return i;
  };
  const threshold = relevanceThreshold(result);
  const missed = new Set(analysis.missedByAll);
  const questions = result.questions.map((q) => ({
    id: q.id,
    text: q.text,
    tags: q.tags,
    rel: Object.entries(q.relevant)
      .filter(([d]) => isRelevant(q, d, threshold))
      .map(([d, g]) => [intern(d), g]),
    missed: missed.has(q.id),
  }));
  // Candidates: the best first, then by the primary metric descending.
  const cand = analysis.rows
    .filter((r) => r.candidate)
    .sort((a, b) =>
      a.index === analysis.best?.index ? -1 : b.index === analysis.best?.index ? 1 :
        (b.metrics[analysis.primaryMetric]?.mean ?? -Infinity) - (a.metrics[analysis.primaryMetric]?.mean ?? -Infinity) || a.index - b.index,
    );
  const configs = cand.map((r) => ({ id: r.id, label: retrieverLabel(result.configs[r.index]), tier: r.tier ?? null }));
  const runs = cand.map((r) => {
    const row = result.configs[r.index];
    const byQid = new Map(row.perQuery.map((d) => [d.qid, d]));
    return result.questions.map((q) => {
      const d = byQid.get(q.id);
      if (!d) return [null, null, []];
      const hits: (number | string)[] = [];
      for (const x of d.retrieved) {
        const di = intern(x.docId);
        const m = x.chunkId.startsWith(`${x.docId}#`) ? x.chunkId.slice(x.docId.length + 1) : null;
        const chunk = m !== null && /^(0|[1-9][0-9]*)$/.test(m) ? Number(m) : x.chunkId;
        hits.push(di, chunk, Math.round(x.score * 1e4) / 1e4);
      }
      const v = d.metrics[analysis.primaryMetric];
      return [d.firstRelevantRank, typeof v === 'number' ? v : null, hits];
    });
  });
  return { primary: analysis.primaryMetric, threshold, docs, questions, configs, runs };
}

interface Group {
  mode: Mode;
  model: string | null;
  title: string;
}

function groups(result: SweepResult): Group[] {
  const out: Group[] = [];
  const seen = new Set<string>();
  const order: Mode[] = ['keyword', 'semantic', 'hybrid'];
  const rows = [...result.configs].sort((a, b) => order.indexOf(a.config.mode) - order.indexOf(b.config.mode));
  for (const r of rows) {
    const key = `${r.config.mode}\u0000${r.config.embedding ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ mode: r.config.mode, model: r.config.embedding, title: retrieverLabel(r) });
  }
  return out;
}

function td(text: string, opts: { v?: number | string | null; cls?: string } = {}): string {
  const v = opts.v === undefined ? '' : ` data-v="${opts.v === null ? '' : h(String(opts.v))}"`;
  return `<td${v}${opts.cls ? ` class="${opts.cls}"` : ''}>${text}</td>`;
}

/** `neg`/`pos` colour class when x differs from 0 at the shown resolution (half a unit of the last decimal). */
function signedClass(x: number | null | undefined, half = 0.0005): string {
  return typeof x === 'number' && x <= -half ? 'neg' : typeof x === 'number' && x >= half ? 'pos' : '';
}

/** The selection (winner's curse) and choosing-k section; empty when neither applies. */
function verdictSectionsHtml(analysis: Analysis, codeId: (s: string) => string): string[] {
  const style = { id: codeId, text: h };
  const sel = selectionParagraph(analysis, style);
  const curves = kCurveRows(analysis, style);
  if (sel.length === 0 && curves.length === 0) return [];
  const out = ['<section id="selection"><h2>Selection and the choice of k</h2>'];
  for (const l of sel) out.push(`<p>${l}</p>`);
  for (const a of kCurveAdvice(analysis, style)) out.push(`<p>${a}</p>`);
  for (const c of curves) {
    out.push(`<h3>${codeId(c.configId)}</h3><p>${c.sentence}</p>`);
    out.push(
      '<div class="scroll"><table><thead><tr>' +
        c.header.map((x) => `<th>${h(x)}</th>`).join('') +
        '</tr></thead><tbody>' +
        c.rows.map((r) => `<tr>${r.map((x) => `<td>${h(x)}</td>`).join('')}</tr>`).join('') +
        '</tbody></table></div>',
    );
  }
  out.push('</section>');
  return out;
}

/** Renders report.html. See the module comment for the guarantees. */
export function renderHtml(result: SweepResult, analysis: Analysis): string {
  const pm = analysis.primaryMetric;
  const fam = analysis.primaryFamily;
  const byId = new Map(result.configs.map((c, i) => [c.config.id, i]));
  const body: string[] = [];
  const codeId = (s: string): string => `<code>${h(s)}</code>`;

  body.push(`<h1>Retrieval sweep report: ${h(result.name)}</h1>`);
  body.push(`<p class="muted">${h(runSummary(result, analysis))}. Started ${h(result.createdAt)}.</p>`);
  body.push(
    '<nav>' +
      [
        ['recommendation', 'Recommendation'],
        ['tiers', 'Tiers'],
        ...(analysis.selection || analysis.kCurves.length > 0 ? [['selection', 'Selection and k']] : []),
        ['heatmaps', 'Heatmaps'],
        ['by-k', 'Metric vs k'],
        ['models', 'Models'],
        ['segments', 'Segments'],
        ...(analysis.fusion ? [['fusion', 'Fusion']] : []),
        ['cutoffs', 'Cutoffs'],
        ['matrix', 'Matrix'],
        ['drill', 'Questions'],
        ['problems', 'Missed / failed / warnings'],
        ['method', 'Method'],
      ]
        .map(([id, label]) => `<a href="#${id}">${label}</a>`)
        .join('') +
      '</nav>',
  );

  // Recommendation.
  body.push('<section id="recommendation"><h2>Recommendation</h2><div class="rec">');
  for (const l of recommendationText(result, analysis, { id: (s) => `<strong>${codeId(s)}</strong>`, text: h })) body.push(`<p>${l}</p>`);
  if (analysis.mdd && analysis.mdd.value < 1)
    body.push(
      `<p>With ${analysis.questions} questions, a paired comparison detects a difference of about ${fmt3(analysis.mdd.value)} in ${h(pm)} ` +
        `(80% power, α = ${analysis.alpha}; ${h(analysis.mdd.basis)}).</p>`,
    );
  body.push('</div>');
  for (const w of analysis.warnings) body.push(`<div class="warn">${h(w)}</div>`);
  body.push('</section>');

  // Tiers.
  body.push(`<section id="tiers"><h2>Candidates at k = ${analysis.primaryK ?? '—'} against the best on ${h(pm)}</h2>`);
  if (analysis.best) {
    const comp = new Map(analysis.comparisons.map((c) => [c.id, c]));
    const ids = [analysis.best.id, ...analysis.comparisons.map((c) => c.id)];
    // judged@k beside the primary metric (issue 20), ⚠ below unjudged.warnBelow
    const jm = analysis.unjudged?.metric;
    const judgedCell = (v: number | undefined) => (typeof v === 'number' ? `${fmt3(v)}${v < analysis.unjudged!.warnBelow ? ' ⚠' : ''}` : '—');
    const num = (v: number | undefined) => (typeof v === 'number' ? v : null);
    body.push('<div class="scroll"><table class="sortable" id="tier-table"><thead><tr>');
    body.push(
      ['configuration', 'retriever', 'chunking', 'tier', pm, '95% CI', 'diff vs best', `diff ${fmtLevel(analysis.comparisonLevel)} CI`, 'p', 'p (Holm)', 'MC error', 'ms/query', ...(jm ? [jm] : [])]
        .map((s, i) => `<th${[0, 1, 2, 3, 5, 7, 10].includes(i) ? ' class="t"' : ' data-type="num"'}>${h(s)}</th>`)
        .join(''),
    );
    body.push('</tr></thead><tbody>');
    for (const id of ids) {
      const i = byId.get(id)!;
      const r = result.configs[i];
      const ra = analysis.rows[i];
      const m = ra.metrics[pm];
      const c = comp.get(id);
      body.push(
        `<tr class="${ra.tier === 1 ? 'tier1' : ''}${id === analysis.best.id ? ' best' : ''}">` +
          td(codeId(id), { v: id }) +
          td(h(retrieverLabel(r)), { cls: 't' }) +
          td(h(r.config.chunkingKey), { cls: 't' }) +
          td(c && !c.tierDecided ? `undecided at ${c.permutations} resamples` : String(ra.tier ?? ''), { cls: 't' }) +
          td(fmt3(m.mean), { v: m.mean }) +
          td(fmtCI(m.low, m.high), { cls: 't' }) +
          td(c ? fmtSigned(c.diff) : 'best', { v: c ? c.diff : 0, cls: signedClass(c?.diff) }) +
          td(c ? `${fmtSignedCI(c.low, c.high)}${isDagger(c) ? ' †' : ''}` : '', { cls: 't' }) +
          td(c ? fmtP(c.pValue) : '', { v: c ? c.pValue : null }) +
          td(c ? fmtP(c.pHolm) : '', { v: c ? c.pHolm : null }) +
          td(c ? h(fmtMcError(c)) : '', { cls: 't' }) +
          td(fmtQueryMs(r), { v: r.meanQueryMs }) +
          (jm ? td(judgedCell(r.means[jm]), { v: num(r.means[jm]) }) : '') +
          '</tr>',
      );
    }
    body.push('</tbody></table></div>');
    body.push(
      `<p class="muted">Tier 1 (green edge): the best, and every candidate whose Holm-adjusted p ≥ ${analysis.alpha}. ` +
        `diff = candidate − best, paired over questions. ${h(intervalNote(analysis))}</p>`,
    );
  } else body.push('<p>No candidate rows.</p>');
  body.push('</section>');
  body.push(...verdictSectionsHtml(analysis, codeId));

  // Heatmaps and metric vs k.
  const chunkKeys = [...new Set(result.configs.map((c) => c.config.chunkingKey))].sort(compareChunkingKeys);
  const ks = [...new Set(result.configs.map((c) => c.config.k))].sort((a, b) => a - b);
  const val = (r: ConfigResult | undefined): number | null => {
    if (!r || r.status !== 'ok') return null;
    const v = r.means[`${fam}@${r.config.k}`];
    return typeof v === 'number' ? v : null;
  };
  const find = (g: Group, ck: string, k: number): ConfigResult | undefined =>
    result.configs.find((c) => c.config.mode === g.mode && c.config.embedding === g.model && c.config.chunkingKey === ck && c.config.k === k);
  const allVals = result.configs.map(val).filter((v): v is number => v !== null);
  const vmin = allVals.length ? minOf(allVals) : 0;
  const vmax = allVals.length ? maxOf(allVals) : 1;
  const gs = groups(result);
  const recommended = analysis.best !== null && analysis.evidence.enough;
  body.push(
    `<section id="heatmaps"><h2>${h(fam)} over chunking × k</h2><p class="muted">Each cell is ${h(fam)}@k of one configuration; ` +
      'one colour scale across all panels; ' +
      (recommended ? 'the red outline marks the recommended configuration.' : 'no cell is outlined: there is no recommendation.') +
      '</p><div class="charts">',
  );
  for (const g of gs) {
    const values = chunkKeys.map((ck) => ks.map((k) => val(find(g, ck, k))));
    let highlight: [number, number] | undefined;
    // Only a recommendation is outlined: "highest so far" without enough evidence is not one.
    if (recommended && analysis.best) {
      const b = result.configs[analysis.best.index].config;
      if (b.mode === g.mode && b.embedding === g.model) highlight = [chunkKeys.indexOf(b.chunkingKey), ks.indexOf(b.k)];
    }
    body.push(
      heatmap({ title: g.title, rowLabels: chunkKeys, colLabels: ks.map((k) => `k=${k}`), values, min: vmin, max: vmax, xTitle: 'top-k', highlight }),
    );
  }
  body.push('</div></section>');

  body.push(
    `<section id="by-k"><h2>${h(fam)} against k</h2><p class="muted">Bars are 95% bootstrap intervals over questions.</p><div class="charts">`,
  );
  for (const g of gs) {
    const series = chunkKeys
      .map((ck, si) => ({
        name: ck,
        color: SERIES_COLORS[si % SERIES_COLORS.length],
        points: ks.map((k, xi) => {
          const r = find(g, ck, k);
          const y = val(r);
          const iv = r ? analysis.rows[result.configs.indexOf(r)]?.metrics[`${fam}@${k}`] : undefined;
          return { x: xi, y, low: iv?.low ?? null, high: iv?.high ?? null };
        }),
      }))
      .filter((s) => s.points.some((p) => p.y !== null));
    body.push(
      lineChart({
        title: g.title,
        series,
        xMin: -0.3,
        xMax: ks.length - 0.7,
        yMin: 0,
        yMax: 1,
        xTitle: 'top-k',
        yTitle: `${fam}@k`,
        xTicks: ks.map((k, i) => ({ x: i, label: String(k) })),
      }),
    );
  }
  body.push('</div></section>');

  // Models.
  body.push('<section id="models"><h2>Embedding models</h2>');
  if (analysis.models.rows.length === 0) body.push('<p>No semantic rows.</p>');
  else {
    body.push(
      `<p class="muted">Each model's best semantic configuration at k = ${analysis.primaryK}. A higher cosine score does not mean better ranking: scales differ between models.</p><div class="charts">`,
    );
    body.push(
      hbars({
        title: `${analysis.models.metric} (95% CI)`,
        bars: analysis.models.rows.map((m, i) => ({
          label: m.model,
          value: m.ndcg?.mean ?? null,
          low: m.ndcg?.low,
          high: m.ndcg?.high,
          color: SERIES_COLORS[i % SERIES_COLORS.length],
        })),
        min: 0,
        max: 1,
      }),
    );
    const cos = analysis.models.rows.map((m) => m.meanTop1Cosine).filter((v): v is number => v !== null);
    body.push(
      hbars({
        title: 'mean top-1 cosine',
        bars: analysis.models.rows.map((m, i) => ({ label: m.model, value: m.meanTop1Cosine, color: SERIES_COLORS[i % SERIES_COLORS.length] })),
        min: minOf(cos, 0),
        max: 1,
      }),
    );
    body.push('</div><table><thead><tr><th>model</th><th class="t">configuration</th>');
    body.push(`<th>${h(analysis.models.metric)}</th><th class="t">95% CI</th><th>mean top-1 cosine</th></tr></thead><tbody>`);
    for (const m of analysis.models.rows)
      body.push(
        `<tr><td>${h(m.model)}</td><td class="t">${codeId(m.configId)}</td><td>${fmt3(m.ndcg?.mean)}</td>` +
          `<td class="t">${fmtCI(m.ndcg?.low, m.ndcg?.high)}</td><td>${fmt3(m.meanTop1Cosine)}</td></tr>`,
      );
    body.push('</tbody></table>');
    for (const n of analysis.models.notes) body.push(`<div class="warn">${h(n)}</div>`);
  }
  body.push('</section>');

  // Segments.
  body.push('<section id="segments"><h2>Segments</h2>');
  const seg = analysis.segments;
  if (!seg || seg.segments.length === 0) body.push('<p>No tags or folders to segment by.</p>');
  else {
    body.push(
      `<p>${h(pm)} of ${codeId(seg.configId)} per question tag and per top-level folder of the relevant documents; overall ${fmt3(seg.overall)} ` +
        `over ${seg.questions} questions. Points = (segment − overall) × 100; percent = (segment − overall) / overall. ` +
        `"Best here": the candidate with the highest mean on the segment's questions; "tier 1 here": candidates not significantly worse ` +
        `than it there (paired permutation test, Holm over the segment, α = ${analysis.alpha}).</p>`,
    );
    const notes = segmentNotes(analysis);
    if (notes.length > 0) body.push(`<ul>${notes.map((n) => `<li>${h(n)}</li>`).join('')}</ul>`);
    body.push('<div class="scroll"><table class="sortable" id="segment-table"><thead><tr>');
    body.push(
      ['segment', 'kind', 'questions', pm, '95% CI', 'vs overall (points)', 'vs overall (%)', 'best here', `its ${pm}`, 'tier 1 here', 'recommended in it']
        .map((s, i) => `<th${[0, 1, 4, 7, 10].includes(i) ? ' class="t"' : ' data-type="num"'}>${h(s)}</th>`)
        .join(''),
    );
    body.push('</tr></thead><tbody>');
    for (const s of seg.segments)
      body.push(
        '<tr>' +
          td(h(s.name), { v: s.name }) +
          td(s.kind, { cls: 't' }) +
          td(String(s.questions), { v: s.questions }) +
          td(fmt3(s.value), { v: s.value }) +
          td(fmtCI(s.low, s.high), { cls: 't' }) +
          td(fmtSigned1(s.diffPoints), { v: s.diffPoints, cls: signedClass(s.diffPoints, 0.05) }) +
          td(s.diffPercent === null ? '—' : `${fmtSigned1(s.diffPercent)}%`, { v: s.diffPercent, cls: signedClass(s.diffPercent, 0.05) }) +
          td(codeId(s.best.id), { v: s.best.id }) +
          td(fmt3(s.best.value), { v: s.best.value }) +
          td(String(s.tier1.length), { v: s.tier1.length }) +
          td(s.recommendedInTier1 === null ? `undecided at ${s.resamples} resamples` : s.recommendedInTier1 ? 'yes' : '<strong>no</strong>', { cls: 't' }) +
          '</tr>',
      );
    body.push('</tbody></table></div><div class="charts">');
    body.push(
      hbars({
        title: `${pm} by segment (red: overall)`,
        bars: seg.segments.slice(0, 40).map((s) => ({
          label: `${s.kind === 'tag' ? '#' : ''}${clip(s.name, 30)} (${s.questions})`,
          value: s.value,
          low: s.low,
          high: s.high,
          color: s.kind === 'tag' ? SERIES_COLORS[0] : SERIES_COLORS[2],
        })),
        min: 0,
        max: 1,
        reference: { value: seg.overall, label: `overall ${fmt3(seg.overall)}` },
      }),
    );
    body.push('</div>');
  }
  body.push('</section>');

  // Fusion.
  if (analysis.fusion) {
    const fv = analysis.fusion;
    body.push(`<section id="fusion"><h2>Fusion: ${h(pm)} against the semantic weight</h2>`);
    body.push(
      `<p class="muted">Each hybrid row against its two parents (the keyword and the semantic row with the same chunking, embedding, rerank and k): ` +
        `paired permutation test against each, Holm over the ${fv.tests} tests of this view. x is alpha (convex) or the weight (weighted RRF); ` +
        'plain RRF has no weight. Bars are 95% bootstrap intervals; dashed lines are the parents.</p>',
    );
    for (const g of fv.groups) {
      body.push(`<p>${h(g.sentence)}</p>`);
      body.push('<div class="scroll"><table class="sortable"><thead><tr>');
      body.push(
        ['fusion', 'method', 'x', pm, '95% CI', 'tier', 'vs keyword', 'p (Holm)', 'vs semantic', 'p (Holm)', 'beats both']
          .map((s, i) => `<th${[0, 1, 4, 10].includes(i) ? ' class="t"' : ' data-type="num"'}>${h(s)}</th>`)
          .join(''),
      );
      body.push('</tr></thead><tbody>');
      for (const [label, par] of [['keyword parent', g.keyword], ['semantic parent', g.semantic]] as const)
        if (par)
          body.push(
            '<tr>' +
              td(codeId(par.id), { v: par.id }) +
              td(label, { cls: 't' }) +
              td('—', { v: null }) +
              td(fmt3(par.value.mean), { v: par.value.mean }) +
              td(fmtCI(par.value.low, par.value.high), { cls: 't' }) +
              td('', { v: null }).repeat(5) +
              td('', { cls: 't' }) +
              '</tr>',
          );
      for (const p of g.points)
        body.push(
          `<tr class="${p.tier === 1 ? 'tier1' : ''}">` +
            td(codeId(p.fusion), { v: p.fusion }) +
            td(p.method, { cls: 't' }) +
            td(p.x === null ? '—' : String(p.x), { v: p.x }) +
            td(fmt3(p.value.mean), { v: p.value.mean }) +
            td(fmtCI(p.value.low, p.value.high), { cls: 't' }) +
            td(p.tier === undefined ? '' : String(p.tier), { v: p.tier ?? null }) +
            td(fmtSigned(p.vsKeyword?.diff), { v: p.vsKeyword?.diff ?? null, cls: signedClass(p.vsKeyword?.diff) }) +
            td(fmtP(p.vsKeyword?.pHolm), { v: p.vsKeyword?.pHolm ?? null }) +
            td(fmtSigned(p.vsSemantic?.diff), { v: p.vsSemantic?.diff ?? null, cls: signedClass(p.vsSemantic?.diff) }) +
            td(fmtP(p.vsSemantic?.pHolm), { v: p.vsSemantic?.pHolm ?? null }) +
            td(p.beatsBoth ? '<strong>yes</strong>' : 'no', { cls: 't' }) +
            '</tr>',
        );
      body.push('</tbody></table></div>');
      const methods = [...new Set(g.points.filter((p) => p.x !== null).map((p) => p.method))];
      if (methods.length > 0) {
        const flat = (y: number, name: string, color: string) => ({ name, color, dashed: true, points: [{ x: 0, y }, { x: 1, y }] });
        const series = [
          ...methods.map((m, i) => ({
            name: m === 'convex' ? 'convex (x = alpha)' : 'weighted RRF (x = weight)',
            color: SERIES_COLORS[i % SERIES_COLORS.length],
            points: g.points
              .filter((p) => p.method === m && p.x !== null)
              .map((p) => ({ x: p.x!, y: p.value.mean, low: p.value.low, high: p.value.high })),
          })),
          ...(g.keyword ? [flat(g.keyword.value.mean, 'keyword parent', '#777')] : []),
          ...(g.semantic ? [flat(g.semantic.value.mean, 'semantic parent', '#000000')] : []),
        ];
        body.push(
          '<div class="charts">' +
            lineChart({
              title: `${g.chunkingKey}${g.embedding ? ` ${g.embedding}` : ''}${g.rerank ? ` ${g.rerank}` : ''} k=${g.k}`,
              series,
              xMin: 0,
              xMax: 1,
              yMin: 0,
              yMax: 1,
              xTitle: 'semantic weight (alpha or RRF weight)',
              yTitle: pm,
            }) +
            '</div>',
        );
      }
    }
    body.push('</section>');
  }

  // Cutoffs.
  body.push('<section id="cutoffs"><h2>Similarity cutoffs</h2>');
  if (analysis.cutoffs.length === 0) body.push('<p>No semantic rows with cosine scores.</p>');
  else {
    body.push(
      '<p class="muted">Per model, the semantic row with the largest k at its best chunking. Keeping results with score ≥ threshold: ' +
        'precision = kept results whose document is relevant / kept results; recall = relevant documents with a kept result / relevant ' +
        'documents retrieved anywhere in the lists (a cutoff cannot recover what was never retrieved).</p>',
    );
    for (const c of analysis.cutoffs) {
      body.push(`<h3>${h(c.model)}: <span class="muted">${codeId(c.configId)}, ${c.results} results, ${c.relevantResults} relevant</span></h3>`);
      body.push('<div class="charts">');
      const pts = (key: 'precision' | 'recall' | 'f1') => c.curve.map((p) => ({ x: p.threshold, y: p[key] }));
      body.push(
        lineChart({
          title: `precision and recall against the threshold`,
          series: [
            { name: 'precision', color: SERIES_COLORS[0], points: pts('precision') },
            { name: 'recall', color: SERIES_COLORS[1], points: pts('recall') },
            { name: 'F1', color: '#777', points: pts('f1'), dashed: true },
          ],
          xMin: c.minScore,
          xMax: c.maxScore,
          yMin: 0,
          yMax: 1,
          xTitle: 'cosine threshold',
          yTitle: 'precision / recall',
          vlines: [
            { x: c.best.threshold, label: `F1-best ${c.best.threshold.toFixed(3)}`, color: SERIES_COLORS[2] },
            { x: analysis.fixedCutoff, label: `fixed ${analysis.fixedCutoff}`, color: '#d00' },
          ],
        }),
      );
      const hs = c.histogram;
      body.push(
        histogram({
          title: 'cosine scores of retrieved results',
          binLabels: hs.relevant.map((_, i) => hs.edges[i].toFixed(2)),
          series: [
            { name: 'relevant', color: SERIES_COLORS[2], counts: hs.relevant },
            { name: 'not relevant', color: SERIES_COLORS[5], counts: hs.nonRelevant },
          ],
          xTitle: 'cosine similarity',
        }),
      );
      body.push('</div>');
      body.push(
        '<table><thead><tr><th>threshold</th><th>kept</th><th>precision</th><th>recall</th><th>F1</th></tr></thead><tbody>' +
          `<tr><td>F1-best ${fmt3(c.best.threshold)}</td><td>${c.best.kept}</td><td>${fmt3(c.best.precision)}</td><td>${fmt3(c.best.recall)}</td><td>${fmt3(c.best.f1)}</td></tr>` +
          `<tr><td>fixed ${analysis.fixedCutoff}</td><td>${c.fixed.kept}</td><td>${fmt3(c.fixed.precision)}</td><td>${fmt3(c.fixed.recall)}</td><td>${fmt3(c.fixed.f1)}</td></tr>` +
          `<tr><td>fixed − best</td><td></td><td class="${signedClass(c.fixed.precisionChange)}">${fmtSigned(c.fixed.precisionChange)}</td>` +
          `<td class="${signedClass(c.fixed.recallChange)}">${fmtSigned(c.fixed.recallChange)}</td><td></td></tr></tbody></table>`,
      );
      if (analysis.fixedCutoff > c.maxScore)
        body.push(`<div class="warn">A fixed ${analysis.fixedCutoff} cutoff is above every score of ${h(c.model)} (highest ${fmt3(c.maxScore)}): it keeps nothing.</div>`);
    }
  }
  body.push('</section>');

  // Matrix.
  body.push(
    `<section id="matrix"><h2>Full matrix</h2><p class="muted">Sorted by ${h(fam)} (rows at k = ${analysis.primaryK ?? '—'} first); click a header to sort. ` +
      'Metrics are at each row\'s own k.</p><div class="scroll"><table class="sortable" id="matrix-table"><thead><tr>',
  );
  const mh = ['configuration', 'mode', 'embedding', 'fusion', 'rerank', 'chunking', 'k', ...ROW_FAMILIES, `${fam} 95% CI`, 'tier', 'build s', 'ms/query', 'status'];
  const textCols = new Set(['configuration', 'mode', 'embedding', 'fusion', 'rerank', 'chunking', `${fam} 95% CI`, 'status']);
  body.push(mh.map((s) => `<th${textCols.has(s) ? ' class="t"' : ' data-type="num"'}>${h(s)}</th>`).join(''));
  body.push('</tr></thead><tbody>');
  for (const i of matrixOrder(result, analysis)) {
    const r = result.configs[i];
    const ra = analysis.rows[i];
    const iv = ra?.metrics[`${fam}@${r.config.k}`];
    const cls = [r.status === 'failed' ? 'failed' : '', ra?.tier === 1 ? 'tier1' : '', analysis.best?.index === i ? 'best' : '']
      .filter(Boolean)
      .join(' ');
    body.push(
      `<tr${cls ? ` class="${cls}"` : ''}>` +
        td(codeId(r.config.id), { v: r.config.id }) +
        td(h(r.config.mode), { cls: 't' }) +
        td(h(r.config.embedding ?? ''), { cls: 't' }) +
        td(h(r.config.fusion?.key ?? ''), { cls: 't' }) +
        td(h(rerankKey(r.config.rerank) ?? ''), { cls: 't' }) +
        td(h(r.config.chunkingKey), { cls: 't' }) +
        td(String(r.config.k), { v: r.config.k }) +
        ROW_FAMILIES.map((f) => {
          const v = r.means[`${f}@${r.config.k}`];
          return td(fmt3(v), { v: typeof v === 'number' ? v : null });
        }).join('') +
        td(fmtCI(iv?.low, iv?.high), { cls: 't' }) +
        td(String(ra?.tier ?? ''), { v: ra?.tier ?? null }) +
        td(fmtTime(r.buildSeconds), { v: r.buildSeconds }) +
        td(fmtQueryMs(r), { v: r.meanQueryMs }) +
        td(r.status === 'failed' ? `failed: ${h(clip(r.error ?? '', 120))}` : 'ok', { cls: 't' }) +
        '</tr>',
    );
  }
  body.push('</tbody></table></div></section>');

  // Drill-down.
  body.push(
    '<section id="drill"><h2>Per-question drill-down</h2><p class="muted">Pick a question to see its relevant documents and what each ' +
      `candidate configuration (k = ${analysis.primaryK ?? '—'}) retrieved; relevant results are green, the first row is the recommended configuration.</p>` +
      '<noscript><p>The drill-down needs JavaScript.</p></noscript>' +
      '<div id="drill-controls"><div><input id="drill-filter" type="search" placeholder="filter by id or text" size="40"> ' +
      '<label><input id="drill-missed" type="checkbox"> only questions the recommended configuration missed</label>' +
      '<div id="drill-count" class="muted"></div><select id="drill-list" size="10"></select></div></div>' +
      '<div id="drill-detail"></div></section>',
  );

  // Evidence level: projection and equal token budgets.
  const ev = evidenceSection(result);
  if (ev) {
    const table = (t: { caption: string; header: string[]; rows: string[][] }) =>
      `<p class="muted">${h(t.caption)}</p><table><thead><tr>${t.header.map((c) => `<th>${h(c)}</th>`).join('')}</tr></thead><tbody>` +
      t.rows.map((r) => `<tr>${r.map((c) => `<td>${h(c)}</td>`).join('')}</tr>`).join('') +
      '</tbody></table>';
    body.push(
      `<section id="evidence"><h2>Evidence level: chunk sizes at equal token budget</h2><p>${h(ev.intro)}</p>` +
        table(ev.projection) +
        table(ev.budget) +
        '</section>',
    );
  }

  // Problems.
  body.push(`<section id="problems"><h2>Questions every configuration missed (${analysis.missedByAll.length})</h2>`);
  if (analysis.missedByAll.length === 0) body.push('<p>None.</p>');
  else {
    const qById = new Map(result.questions.map((q) => [q.id, q]));
    const threshold = relevanceThreshold(result);
    body.push('<div class="scroll"><table><thead><tr><th>question</th><th class="t">text</th><th class="t">relevant documents</th></tr></thead><tbody>');
    for (const id of analysis.missedByAll.slice(0, 200)) {
      const q = qById.get(id)!;
      const rel = Object.keys(q.relevant).filter((d) => isRelevant(q, d, threshold));
      body.push(`<tr><td>${h(id)}</td><td class="t">${h(clip(q.text, 200))}</td><td class="t">${h(clip(rel.join(', '), 200))}</td></tr>`);
    }
    body.push('</tbody></table></div>');
    if (analysis.missedByAll.length > 200) body.push(`<p>… and ${analysis.missedByAll.length - 200} more (see the drill-down).</p>`);
  }
  body.push(`<h2>Failed configurations (${analysis.failed.length})</h2>`);
  if (analysis.failed.length === 0) body.push('<p>None.</p>');
  else {
    body.push('<table><thead><tr><th>configuration</th><th class="t">error</th></tr></thead><tbody>');
    for (const f of analysis.failed) body.push(`<tr class="failed"><td>${codeId(f.id)}</td><td class="t">${h(f.error)}</td></tr>`);
    body.push('</tbody></table>');
  }
  body.push(`<h2>Warnings (${analysis.warnings.length})</h2>`);
  if (analysis.warnings.length === 0) body.push('<p>None.</p>');
  else body.push(`<ul>${analysis.warnings.map((w) => `<li>${h(w)}</li>`).join('')}</ul>`);
  body.push('</section>');

  body.push(`<section id="method"><h2>Method</h2><ul>${methodLines(result, analysis).map((l) => `<li>${h(l)}</li>`).join('')}</ul></section>`);

  const hash = createHash('sha256').update(CLIENT_JS, 'utf8').digest('base64');
  const csp = `default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-${hash}'; base-uri 'none'; form-action 'none'`;
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<link rel="icon" href="data:,">',
    `<title>Retrieval sweep report: ${h(result.name)}</title>`,
    `<style>${STYLE}</style>`,
    '</head><body><main>',
    ...body,
    '</main>',
    `<script type="application/json" id="report-data">${jsonForScript(drillData(result, analysis))}</script>`,
    `<script>${CLIENT_JS}</script>`,
    '</body></html>',
    '',
  ].join('\n');
}
