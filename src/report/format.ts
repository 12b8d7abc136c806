/**
 * Number formatting and escaping shared by the renderers. Pure.
 */

/** A metric value for reading: 3 decimals, `—` for null, undefined or NaN. */
export function fmt3(x: number | null | undefined): string {
  return typeof x === 'number' && Number.isFinite(x) ? x.toFixed(3) : '—';
}

/** A signed difference with 3 decimals (`+0.012`, `−0.034`, `0.000`). */
export function fmtSigned(x: number | null | undefined): string {
  if (typeof x !== 'number' || !Number.isFinite(x)) return '—';
  const s = Math.abs(x).toFixed(3);
  if (Number(s) === 0) return '0.000';
  return x > 0 ? `+${s}` : `−${s}`;
}

/** A signed number with 1 decimal (`+2.5`, `−20.0`), for points and percent. */
export function fmtSigned1(x: number | null | undefined): string {
  if (typeof x !== 'number' || !Number.isFinite(x)) return '—';
  const s = Math.abs(x).toFixed(1);
  if (Number(s) === 0) return '0.0';
  return x > 0 ? `+${s}` : `−${s}`;
}

/** An interval `[0.512, 0.634]`, or `—` when either end is missing. */
export function fmtCI(low: number | null | undefined, high: number | null | undefined): string {
  if (typeof low !== 'number' || typeof high !== 'number' || !Number.isFinite(low) || !Number.isFinite(high)) return '—';
  return `[${low.toFixed(3)}, ${high.toFixed(3)}]`;
}

/** An interval of differences `[−0.051, +0.012]`. */
export function fmtSignedCI(low: number | null | undefined, high: number | null | undefined): string {
  if (typeof low !== 'number' || typeof high !== 'number') return '—';
  return `[${fmtSigned(low)}, ${fmtSigned(high)}]`;
}

/** A p-value: `<0.001` below 0.001, else 3 decimals. */
export function fmtP(p: number | null | undefined): string {
  if (typeof p !== 'number' || !Number.isFinite(p)) return '—';
  return p < 0.001 ? '<0.001' : p.toFixed(3);
}

/** Milliseconds or seconds for reading: 2 significant decimals below 10, 1 above. */
export function fmtTime(x: number | null | undefined): string {
  if (typeof x !== 'number' || !Number.isFinite(x)) return '—';
  return x < 10 ? x.toFixed(2) : x.toFixed(1);
}

/** Escapes text for HTML element content and quoted attribute values: `& < > " '`. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * Escapes text for a Markdown table cell or paragraph: `<` and `>` become entities (so a question holding `<script>`
 * shows as text in renderers that allow inline HTML), Markdown punctuation (backslash, backtick, `*`, `[`, `]`, `|`,
 * `#`, `~`) is backslash-escaped,
 * `_` only at a word edge (intraword underscores such as `trec_eval` never emphasise in CommonMark), `|` cannot end
 * a cell, and line breaks become spaces.
 */
export function escapeMd(s: string): string {
  return s
    .replace(/[<>]/g, (c) => (c === '<' ? '&lt;' : '&gt;'))
    .replace(/([\\`*[\]|#~])/g, '\\$1')
    .replace(/_/g, (m, i: number, str: string) => {
      const word = /[\p{L}\p{N}]/u;
      return word.test(str[i - 1] ?? '') && word.test(str[i + 1] ?? '') ? m : '\\_';
    })
    .replace(/\r?\n|\r/g, ' ');
}

/** Text cut to `max` characters with an ellipsis. */
export function clip(s: string, max: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length <= max ? one : `${one.slice(0, Math.max(0, max - 1))}…`;
}

/**
 * JSON for a `<script type="application/json">` block: every `<`, `>` and `&` becomes a `\u00XX` escape and the line
 * separators U+2028/U+2029 are escaped, so no text inside can close the block or start a tag. `JSON.parse` of the
 * block's text gives back the value.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** Pads plain-text table cells to aligned columns (first column left, others right). */
export function textTable(rows: string[][], opts: { leftColumns?: number } = {}): string[] {
  const left = opts.leftColumns ?? 1;
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, [...c].length)));
  return rows.map((r) =>
    r
      .map((c, i) => {
        const pad = ' '.repeat(widths[i] - [...c].length);
        return i < left ? c + pad : pad + c;
      })
      .join('  ')
      .trimEnd(),
  );
}
