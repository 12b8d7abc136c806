import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/report/analyze.js';
import { MATRIX_COLUMNS, csvField } from '../../src/report/matrix.js';
import { renderReports } from '../../src/report/render.js';
import { escapeMd, jsonForScript } from '../../src/report/format.js';
import { failedRow, question, row, spec, sweep } from './fixtures.js';

const XSS_Q = '<script>alert(1)</script> what is the refund window?';
const XSS_DOC = 'faq/<script>alert(2)</script>.md';

/** Three questions, a keyword and a semantic row at k 5, one at k 10, a failed row with a comma and quotes in its error. */
function fixture() {
  const qs = [
    question('q1', { [XSS_DOC]: 1 }, ['paraphrase'], XSS_Q),
    question('q2', { 'faq/b.md': 2 }, ['part-number']),
    question('q3', { 'guides/c.md': 1 }, []),
  ];
  const ret = (docs: string[], scores: number[]) => docs.map((d, i) => ({ chunkId: `${d}#${i}`, docId: d, score: scores[i] }));
  const retrieved = [ret([XSS_DOC, 'x.md'], [0.91, 0.5]), ret(['faq/b.md'], [0.8]), ret(['x.md'], [0.7])];
  const rows = [
    row(spec({ mode: 'keyword', k: 5 }), qs, { ndcg: [1, 1 / 3, 0], recall: [1, 1, 0] }, { retrieved, buildSeconds: 0.125, meanQueryMs: 2.5 }),
    row(spec({ mode: 'semantic', embedding: 'use-lite', k: 5, chunkingKey: 'cs256-ov32' }), qs, { ndcg: [0.5, 1 / 3, 0] }, { retrieved, firstRelevant: [2, 1, null] }),
    row(spec({ mode: 'keyword', k: 10 }), qs, { ndcg: [1, 0.5, 0] }, { retrieved }),
    failedRow(spec({ mode: 'hybrid', embedding: 'use-lite', k: 5 }), 'model "use-lite" failed, retry later'),
  ];
  const result = sweep(qs, rows, { primaryMetric: 'ndcg@5' });
  return { result, analysis: analyze(result) };
}

/** Minimal RFC 4180 parser for the test. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let field = '';
  let rec: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      rec.push(field);
      field = '';
    } else if (c === '\n') {
      rec.push(field);
      rows.push(rec);
      rec = [];
      field = '';
    } else field += c;
  }
  return rows;
}

describe('matrix.csv', () => {
  it('has the documented columns in order', () => {
    const { result, analysis } = fixture();
    const header = renderReports(result, analysis)['matrix.csv'].split('\n')[0];
    expect(header).toBe(
      'config_id,chunking,overlap,mode,retriever,embedding,fusion,rerank,k,hit_rate,recall,precision,mrr,ndcg,ndcg_exp,map,questions,build_seconds,' +
        'mean_query_ms,status,error,hit_rate_ci_low,hit_rate_ci_high,recall_ci_low,recall_ci_high,precision_ci_low,' +
        'precision_ci_high,mrr_ci_low,mrr_ci_high,ndcg_ci_low,ndcg_ci_high,ndcg_exp_ci_low,ndcg_exp_ci_high,map_ci_low,map_ci_high,tier',
    );
    expect(header.split(',')).toEqual([...MATRIX_COLUMNS]);
  });

  it('writes values at the row k with full precision (String(x)), chunking none or the size, empty embedding for keyword', () => {
    const { result, analysis } = fixture();
    const rows = parseCsv(renderReports(result, analysis)['matrix.csv']);
    const col = (name: string) => rows[0].indexOf(name);
    const kw = rows[1];
    expect(kw[col('config_id')]).toBe('none.keyword.k5');
    expect(kw[col('chunking')]).toBe('none');
    expect(kw[col('embedding')]).toBe('');
    // ndcg mean (1 + 1/3 + 0) / 3, full precision.
    expect(kw[col('ndcg')]).toBe(String((1 + 1 / 3 + 0) / 3));
    expect(Number(kw[col('ndcg')])).toBe((1 + 1 / 3 + 0) / 3);
    expect(kw[col('recall')]).toBe(String(2 / 3));
    expect(kw[col('build_seconds')]).toBe('0.125');
    expect(kw[col('mean_query_ms')]).toBe('2.5');
    expect(kw[col('status')]).toBe('ok');
    expect(kw[col('tier')]).toBe('1');
    expect(Number(kw[col('ndcg_ci_low')])).toBe(analysis.rows[0].metrics['ndcg@5'].low);
    expect(Number(kw[col('ndcg_ci_high')])).toBe(analysis.rows[0].metrics['ndcg@5'].high);
    const sem = rows[2];
    expect(sem[col('chunking')]).toBe('256');
    expect(sem[col('overlap')]).toBe('32');
    expect(sem[col('embedding')]).toBe('use-lite');
    const k10 = rows[3];
    expect(k10[col('k')]).toBe('10');
    expect(k10[col('ndcg')]).toBe(String((1 + 0.5 + 0) / 3));
    expect(k10[col('tier')]).toBe('');
  });

  it('a failed row keeps its error (quoted: comma and quotes) and leaves metrics empty', () => {
    const { result, analysis } = fixture();
    const csv = renderReports(result, analysis)['matrix.csv'];
    expect(csv).toContain('"model ""use-lite"" failed, retry later"');
    const rows = parseCsv(csv);
    const f = rows[4];
    expect(f[rows[0].indexOf('status')]).toBe('failed');
    expect(f[rows[0].indexOf('error')]).toBe('model "use-lite" failed, retry later');
    expect(f[rows[0].indexOf('ndcg')]).toBe('');
    expect(f).toHaveLength(MATRIX_COLUMNS.length);
  });

  it('csvField quotes CR, LF, comma and quote only', () => {
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('a\nb')).toBe('"a\nb"');
    expect(csvField('plain')).toBe('plain');
    expect(csvField(null)).toBe('');
    expect(csvField(0.1 + 0.2)).toBe('0.30000000000000004');
  });
});

describe('matrix.json', () => {
  it('holds primary_metric and rows with the CSV keys plus metrics keyed by canonical name', () => {
    const { result, analysis } = fixture();
    const j = JSON.parse(renderReports(result, analysis)['matrix.json']) as { primary_metric: string; rows: Record<string, unknown>[] };
    expect(j.primary_metric).toBe('ndcg@5');
    expect(j.rows).toHaveLength(4);
    for (const r of j.rows) for (const c of MATRIX_COLUMNS) expect(r).toHaveProperty(c);
    expect(j.rows[0].ndcg).toBe((1 + 1 / 3 + 0) / 3);
    expect((j.rows[0].metrics as Record<string, number>)['ndcg@5']).toBe((1 + 1 / 3 + 0) / 3);
    // One JSON type per key (issue 22): chunking is the size or null for whole documents, never the string "none";
    // chunking_key is always the id's string.
    expect(j.rows[0].chunking).toBeNull();
    expect(j.rows[1].chunking).toBe(256);
    expect(j.rows[0].chunking_key).toBe('none');
    expect(j.rows[1].chunking_key).toBe('cs256-ov32');
    for (const r of j.rows) expect(r.chunking === null || typeof r.chunking === 'number').toBe(true);
    expect(Object.keys(j.rows[0]).slice(0, 4)).toEqual(['config_id', 'chunking', 'chunking_key', 'overlap']);
    expect(j.rows[0].embedding).toBeNull();
    expect(j.rows[3].status).toBe('failed');
    expect(j.rows[3].ndcg).toBeNull();
  });
});

describe('report.md', () => {
  it('names the primary metric and k and says they were declared before the run', () => {
    const { result, analysis } = fixture();
    const md = renderReports(result, analysis)['report.md'];
    expect(md).toContain('The primary metric and k were declared before the run: ndcg@5 (k = 5).');
    // Three judged questions: not enough evidence to choose, but the highest row is still named.
    expect(md).toMatch(/Not enough evidence to choose a configuration: only 3 judged question\(s\), fewer than the 30 .*Highest so far: \*\*`none\.keyword\.k5`\*\*/);
  });

  it('has every section and rounds to 3 decimals', () => {
    const { result, analysis } = fixture();
    const md = renderReports(result, analysis)['report.md'];
    for (const h of [
      '## Recommendation',
      '## Tier 1',
      '## Full matrix, sorted by ndcg',
      '## Embedding models',
      '## Segments of',
      '## Similarity cutoffs',
      '## Questions every configuration missed',
      '## Failed configurations (1)',
      '## Warnings',
      '## Method',
    ])
      expect(md).toContain(h);
    // ndcg@5 of the keyword row (1 + 1/3 + 0) / 3 = 0.4444… → 0.444.
    expect(md).toContain('| 0.444 |');
    expect(md).not.toContain('0.4444');
  });

  it('sorts the full matrix by the primary metric with rows at the primary k first and failed rows last', () => {
    const { result, analysis } = fixture();
    const md = renderReports(result, analysis)['report.md'];
    const section = md.slice(md.indexOf('## Full matrix'), md.indexOf('## Embedding models'));
    const ids = [...section.matchAll(/^\| `([^`]+)`/gm)].map((m) => m[1]);
    expect(ids).toEqual(['none.keyword.k5', 'cs256-ov32.semantic.use-lite.k5', 'none.keyword.k10', 'none.hybrid.use-lite.k5']);
  });

  it('escapes question text and document ids (no raw <script> anywhere)', () => {
    const { result } = fixture();
    // Make q1 missed by every row so its text and documents appear in the missed-questions table.
    for (const r of result.configs) if (r.perQuery[0]) r.perQuery[0].firstRelevantRank = null;
    const md = renderReports(result, analyze(result))['report.md'];
    expect(md).not.toContain('<script>');
    expect(md).toContain('&lt;script&gt;alert(1)&lt;/script&gt; what is the refund window?');
    expect(md).toContain('faq/&lt;script&gt;alert(2)&lt;/script&gt;.md');
  });

  it('escapeMd neutralises table pipes, Markdown punctuation and line breaks', () => {
    expect(escapeMd('a|b')).toBe('a\\|b');
    expect(escapeMd('*x* _y_')).toBe('\\*x\\* \\_y\\_');
    expect(escapeMd('one\ntwo')).toBe('one two');
    // Intraword underscores never emphasise in CommonMark, so trec_eval stays readable.
    expect(escapeMd('trec_eval and _x')).toBe('trec_eval and \\_x');
  });
});

describe('terminal summary', () => {
  it('shows the tier-1 rows with intervals and the recommendation', () => {
    const { result, analysis } = fixture();
    const t = renderReports(result, analysis).terminal;
    expect(t).toContain('none.keyword.k5');
    expect(t).toContain('Not enough evidence to choose a configuration');
    expect(t).toContain('Highest so far: none.keyword.k5');
    expect(t).toContain('declared before the run');
    const iv = analysis.rows[0].metrics['ndcg@5'];
    expect(t).toContain(`[${iv.low!.toFixed(3)}, ${iv.high!.toFixed(3)}]`);
  });

  it('stays within 25 lines with 40 tier-1 rows', () => {
    const qs = Array.from({ length: 4 }, (_, j) => question(`q${j}`, { [`d${j}`]: 1 }));
    const rows = Array.from({ length: 40 }, (_, i) =>
      row(spec({ mode: 'keyword', k: 5, chunkingKey: `cs${100 + i}-ov0` }), qs, { ndcg: [0.5, 0.5, 0.5, 0.5] }),
    );
    const result = sweep(qs, rows);
    const a = analyze(result);
    expect(a.tier1).toHaveLength(40);
    const t = renderReports(result, a).terminal;
    expect(t.trimEnd().split('\n').length).toBeLessThanOrEqual(25);
    expect(t).toContain('… and 25 more tier-1 rows');
  });
});

describe('report.html escaping and self-containment', () => {
  it('a <script> in a question and a doc id never appears raw outside the JSON block, which holds no raw <', () => {
    const { result } = fixture();
    for (const r of result.configs) if (r.perQuery[0]) r.perQuery[0].firstRelevantRank = null;
    const html = renderReports(result, analyze(result))['report.html'];
    const open = '<script type="application/json" id="report-data">';
    const start = html.indexOf(open);
    const end = html.indexOf('</script>', start);
    expect(start).toBeGreaterThan(0);
    const block = html.slice(start + open.length, end);
    expect(block).not.toContain('<');
    const outside = html.slice(0, start) + html.slice(end);
    expect(outside).not.toMatch(/<script>alert/i);
    expect(outside).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // Exactly two script elements: the data block and the client script.
    expect(html.match(/<script\b/g)).toHaveLength(2);
    // The block parses back to the original text.
    const data = JSON.parse(block) as { questions: { text: string }[]; docs: string[] };
    expect(data.questions[0].text).toBe(XSS_Q);
    expect(data.docs).toContain(XSS_DOC);
  });

  it('loads nothing from outside: no src/href to other resources, and a CSP that pins the inline script by hash', () => {
    const { result, analysis } = fixture();
    const html = renderReports(result, analysis)['report.html'];
    expect(html).not.toMatch(/<script[^>]+src=/i);
    expect(html).not.toMatch(/<link[^>]+stylesheet/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//i);
    expect(html).not.toContain('@import');
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
    expect(scripts).toHaveLength(1);
    const hash = createHash('sha256').update(scripts[0], 'utf8').digest('base64');
    expect(html).toContain(`script-src 'sha256-${hash}'`);
    expect(html).toContain("default-src 'none'");
  });

  it('jsonForScript escapes <, >, & and the JS line separators and still round-trips', () => {
    const v = { s: '</script><!-- & \u2028 \u2029' };
    const j = jsonForScript(v);
    expect(j).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(j)).toEqual(v);
  });

  it('stays small: 300 questions × 100 rows with 10 results each is under 4 MB', () => {
    const qs = Array.from({ length: 300 }, (_, j) => question(`q${j}`, { [`folder${j % 5}/doc${j}.md`]: 1 }, ['t'], `question text number ${j}`));
    const rows = [];
    for (let i = 0; i < 100; i++) {
      const k = i % 2 === 0 ? 10 : 5;
      const retrieved = qs.map((_, j) =>
        Array.from({ length: k }, (_, r) => ({ chunkId: `folder${j % 5}/doc${j + r}.md#${r}`, docId: `folder${j % 5}/doc${j + r}.md`, score: 0.9 - r / 20 })),
      );
      rows.push(row(spec({ mode: 'semantic', embedding: `m${i % 5}`, chunkingKey: `cs${100 + Math.floor(i / 10)}-ov0`, k }), qs, { ndcg: qs.map((_, j) => ((i + j) % 7) / 7) }, { retrieved }));
    }
    const result = sweep(qs, rows, { primaryMetric: 'ndcg@10' });
    const html = renderReports(result, analyze(result, { resamples: 1000, permutationResamples: 1000 }))['report.html'];
    expect(html.length).toBeLessThan(4_000_000);
  });
});

describe('degenerate sweeps still render', () => {
  it('an empty sweep, an all-failed sweep and a primary metric without k give every file and say why there is no recommendation', () => {
    const qs = [question('q0', { a: 1 })];
    const cases = [
      sweep([], []),
      sweep(qs, [failedRow(spec({ k: 5 }), 'boom')]),
      sweep(qs, [row(spec({ k: 5 }), qs, { ndcg: [1] })], { primaryMetric: 'r_precision' }),
    ];
    for (const s of cases) {
      const a = analyze(s);
      expect(a.best).toBeNull();
      const out = renderReports(s, a);
      expect(out['report.md']).toContain('No configuration can be recommended');
      expect(out['report.html']).toContain('No configuration can be recommended');
      expect(out.terminal).toContain('No configuration can be recommended');
      expect(out['matrix.csv'].split('\n')[0]).toBe(MATRIX_COLUMNS.join(','));
    }
  });
});
