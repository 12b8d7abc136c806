/**
 * Compares two results folders written by `run` (issue 23's byte-identity check: the same config through the old and
 * the new code gives the same numbers).
 *
 * Usage: `npx tsx scripts/compare-results.ts A B` — prints one line per difference (at most 20 per file) and a summary
 * line; exit 0 when identical (timing aside), 1 when something differs, 2 on a usage error.
 *
 * What is compared:
 * - `matrix.csv`: cell by cell, by config_id and column name, every column except the timing ones
 *   ({@link isTimingKey}: `build_seconds`, `mean_query_ms`, and any `*_seconds`, `*_ms`, `*_ms_per_query` name);
 * - `matrix.json`: the whole value with every timing key removed at any depth, compared path by path;
 * - `per-query.jsonl`: byte for byte (it holds no timing), then line by line to name the first differing lines;
 * - `runs/*.trec`: the same file names, each byte for byte.
 * Library use: {@link compareResults} returns the difference lines (empty when identical).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCsv } from '../src/run/recheck.js';

/** True for a column or JSON key that holds a duration (machine-dependent, left out of the comparison). */
export function isTimingKey(key: string): boolean {
  return /(_seconds|_ms|_ms_per_query|^seconds|^timings)$/.test(key) || key === 'seconds';
}

/** Removes timing keys at every depth (a copy). */
function withoutTiming(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutTiming);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (!isTimingKey(k)) out[k] = withoutTiming(x);
    return out;
  }
  return v;
}

/** Paths where `a` and `b` differ (JSON values), at most `limit`. */
function jsonDiff(a: unknown, b: unknown, at: string, out: string[], limit: number): void {
  if (out.length >= limit) return;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${at}: length ${a.length} vs ${b.length}`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) jsonDiff(a[i], b[i], `${at}[${i}]`, out, limit);
    return;
  }
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    for (const k of ka) if (!(k in b)) out.push(`${at}.${k}: only in A`);
    for (const k of kb) if (!(k in a)) out.push(`${at}.${k}: only in B`);
    for (const k of ka) if (k in b) jsonDiff((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}.${k}`, out, limit);
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(`${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`.slice(0, 300));
}

/**
 * Differences between results folders `a` and `b` (see the module comment), one line each, at most 20 per file;
 * empty when they agree (timing aside).
 */
export function compareResults(a: string, b: string): string[] {
  const out: string[] = [];
  const read = (dir: string, f: string) => (existsSync(path.join(dir, f)) ? readFileSync(path.join(dir, f), 'utf8') : null);

  // matrix.csv, by config_id and column.
  const ca = read(a, 'matrix.csv');
  const cb = read(b, 'matrix.csv');
  if (ca === null || cb === null) out.push(`matrix.csv: missing in ${ca === null ? 'A' : 'B'}`);
  else {
    const table = (text: string) => {
      const records = parseCsv(text);
      const cols = text.slice(0, text.indexOf('\n')).split(',');
      return { cols, rows: new Map(records.map((r) => [r.config_id, cols.map((c) => r[c])])) };
    };
    const ta = table(ca);
    const tb = table(cb);
    if (ta.cols.join(',') !== tb.cols.join(',')) out.push(`matrix.csv: columns differ: ${ta.cols.join(',')} vs ${tb.cols.join(',')}`);
    if ([...ta.rows.keys()].join('\n') !== [...tb.rows.keys()].join('\n')) out.push('matrix.csv: row ids or their order differ');
    let n = 0;
    for (const [id, cells] of ta.rows) {
      const other = tb.rows.get(id);
      if (!other) continue;
      ta.cols.forEach((col, i) => {
        if (isTimingKey(col)) return;
        const j = tb.cols.indexOf(col);
        if (j >= 0 && cells[i] !== other[j] && n++ < 20) out.push(`matrix.csv ${id} ${col}: ${cells[i]} vs ${other[j]}`);
      });
    }
    if (n > 20) out.push(`matrix.csv: ${n - 20} more cells differ`);
  }

  // matrix.json minus timing.
  const ja = read(a, 'matrix.json');
  const jb = read(b, 'matrix.json');
  if (ja === null || jb === null) out.push(`matrix.json: missing in ${ja === null ? 'A' : 'B'}`);
  else {
    const d: string[] = [];
    jsonDiff(withoutTiming(JSON.parse(ja)), withoutTiming(JSON.parse(jb)), 'matrix.json', d, 20);
    out.push(...d);
  }

  // per-query.jsonl, byte for byte.
  const pa = read(a, 'per-query.jsonl');
  const pb = read(b, 'per-query.jsonl');
  if (pa === null || pb === null) out.push(`per-query.jsonl: missing in ${pa === null ? 'A' : 'B'}`);
  else if (pa !== pb) {
    const la = pa.split('\n');
    const lb = pb.split('\n');
    if (la.length !== lb.length) out.push(`per-query.jsonl: ${la.length} vs ${lb.length} lines`);
    let n = 0;
    for (let i = 0; i < Math.min(la.length, lb.length); i++) if (la[i] !== lb[i] && n++ < 5) out.push(`per-query.jsonl line ${i + 1}: ${la[i].slice(0, 160)} vs ${lb[i].slice(0, 160)}`);
    out.push(`per-query.jsonl: ${n} line(s) differ`);
  }

  // runs/, byte for byte.
  const ra = existsSync(path.join(a, 'runs')) ? readdirSync(path.join(a, 'runs')).sort() : [];
  const rb = existsSync(path.join(b, 'runs')) ? readdirSync(path.join(b, 'runs')).sort() : [];
  for (const f of ra) if (!rb.includes(f)) out.push(`runs/${f}: only in A`);
  for (const f of rb) if (!ra.includes(f)) out.push(`runs/${f}: only in B`);
  let n = 0;
  for (const f of ra)
    if (rb.includes(f) && readFileSync(path.join(a, 'runs', f), 'utf8') !== readFileSync(path.join(b, 'runs', f), 'utf8') && n++ < 20) out.push(`runs/${f}: differs`);
  if (n > 20) out.push(`runs/: ${n - 20} more files differ`);
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [a, b] = process.argv.slice(2);
  if (!a || !b || !existsSync(a) || !existsSync(b)) {
    process.stderr.write('usage: npx tsx scripts/compare-results.ts RESULTS_A RESULTS_B (two results folders written by run)\n');
    process.exit(2);
  }
  const diffs = compareResults(a, b);
  for (const d of diffs) process.stdout.write(`${d}\n`);
  const runs = existsSync(path.join(a, 'runs')) ? readdirSync(path.join(a, 'runs')).length : 0;
  process.stdout.write(
    diffs.length === 0
      ? `identical: matrix.csv and matrix.json (timing columns aside), per-query.jsonl and ${runs} runs/*.trec\n`
      : `${diffs.length} difference(s)\n`,
  );
  process.exit(diffs.length === 0 ? 0 : 1);
}
