/**
 * Inline SVG charts for report.html, generated as strings: no chart library, no external resource. Every label goes
 * through {@link escapeHtml}. Pure.
 */

import { escapeHtml } from './format.js';
import { maxOf } from '../bounded.js';

/** Okabe & Ito's colour-blind-safe palette, for series. */
export const SERIES_COLORS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#999933', '#000000'];

const VIRIDIS = ['#440154', '#3b528b', '#21918c', '#5ec962', '#fde725'];

function hexToRgb(h: string): [number, number, number] {
  return [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
}

/** Viridis colour for t in [0, 1] (linear between 5 stops), as `rgb(r,g,b)`; also whether dark text reads on it. */
export function viridis(t: number): { fill: string; darkText: boolean } {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const a = hexToRgb(VIRIDIS[i]);
  const b = hexToRgb(VIRIDIS[i + 1]);
  const c = a.map((v, j) => Math.round(v + (b[j] - v) * f));
  const lum = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  return { fill: `rgb(${c[0]},${c[1]},${c[2]})`, darkText: lum > 140 };
}

const r2 = (x: number): string => (Math.round(x * 100) / 100).toString();
const e = escapeHtml;

function svgOpen(w: number, h: number, label: string, cls: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" class="${cls}" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="${e(label)}">` +
    `<title>${e(label)}</title>`;
}

/** Heatmap: rows × columns of values in [min, max]; null cells are grey. `highlight` outlines one cell. */
export function heatmap(o: {
  title: string;
  rowLabels: string[];
  colLabels: string[];
  values: (number | null)[][];
  min: number;
  max: number;
  xTitle: string;
  highlight?: [number, number];
}): string {
  const cw = 64;
  const ch = 28;
  const left = Math.max(80, 8 + 7 * maxOf(o.rowLabels.map((s) => s.length)));
  const top = 34;
  const w = left + cw * o.colLabels.length + 10;
  const h = top + ch * o.rowLabels.length + 34;
  const span = o.max - o.min || 1;
  const parts = [svgOpen(w, h, o.title, 'chart heatmap')];
  parts.push(`<text x="${left}" y="14" class="ct">${e(o.title)}</text>`);
  o.colLabels.forEach((c, j) =>
    parts.push(`<text x="${left + cw * j + cw / 2}" y="${top - 6}" text-anchor="middle" class="tick">${e(c)}</text>`),
  );
  o.rowLabels.forEach((rl, i) => {
    parts.push(`<text x="${left - 6}" y="${top + ch * i + ch / 2 + 4}" text-anchor="end" class="tick">${e(rl)}</text>`);
    o.colLabels.forEach((cl, j) => {
      const v = o.values[i]?.[j] ?? null;
      const x = left + cw * j;
      const y = top + ch * i;
      if (v === null) {
        parts.push(`<rect class="cell" x="${x}" y="${y}" width="${cw - 2}" height="${ch - 2}" fill="#e5e5e5"><title>${e(`${rl}, ${cl}: not run`)}</title></rect>`);
        return;
      }
      const c = viridis((v - o.min) / span);
      const hl = o.highlight && o.highlight[0] === i && o.highlight[1] === j;
      parts.push(
        `<rect class="cell" x="${x}" y="${y}" width="${cw - 2}" height="${ch - 2}" fill="${c.fill}"${hl ? ' stroke="#d00" stroke-width="3"' : ''}>` +
          `<title>${e(`${rl}, ${cl}: ${v.toFixed(3)}`)}</title></rect>`,
      );
      parts.push(
        `<text x="${x + (cw - 2) / 2}" y="${y + ch / 2 + 3}" text-anchor="middle" class="cv" fill="${c.darkText ? '#000' : '#fff'}">${v.toFixed(3)}</text>`,
      );
    });
  });
  parts.push(`<text x="${left + (cw * o.colLabels.length) / 2}" y="${h - 8}" text-anchor="middle" class="axt">${e(o.xTitle)}</text>`);
  parts.push('</svg>');
  return parts.join('');
}

/** One series of a line chart; `low`/`high` draw an interval bar at the point. */
export interface Series {
  name: string;
  color: string;
  points: { x: number; y: number | null; low?: number | null; high?: number | null }[];
  dashed?: boolean;
}

/**
 * Line chart with a linear x axis (or categorical when `xTicks` gives labels for x = 0, 1, …), y in [yMin, yMax],
 * optional interval bars and vertical marker lines.
 */
export function lineChart(o: {
  title: string;
  series: Series[];
  xMin: number;
  xMax: number;
  yMin: number;
  yMax: number;
  xTitle: string;
  yTitle: string;
  xTicks?: { x: number; label: string }[];
  vlines?: { x: number; label: string; color: string }[];
  width?: number;
  height?: number;
}): string {
  const w = o.width ?? 460;
  const h = o.height ?? 260;
  const left = 46;
  const right = 12;
  const top = 26;
  const bottom = 40 + 14 * Math.ceil(o.series.length / 3);
  const pw = w - left - right;
  const ph = h - top - bottom;
  const xs = (x: number): number => left + (o.xMax === o.xMin ? pw / 2 : ((x - o.xMin) / (o.xMax - o.xMin)) * pw);
  const ys = (y: number): number => top + ph - ((y - o.yMin) / (o.yMax - o.yMin || 1)) * ph;
  const parts = [svgOpen(w, h, o.title, 'chart line')];
  parts.push(`<text x="${left}" y="14" class="ct">${e(o.title)}</text>`);
  parts.push(`<rect x="${left}" y="${top}" width="${pw}" height="${ph}" fill="none" stroke="#bbb"/>`);
  for (let i = 0; i <= 4; i++) {
    const y = o.yMin + ((o.yMax - o.yMin) * i) / 4;
    parts.push(`<line x1="${left}" x2="${left + pw}" y1="${r2(ys(y))}" y2="${r2(ys(y))}" stroke="#eee"/>`);
    parts.push(`<text x="${left - 4}" y="${r2(ys(y) + 4)}" text-anchor="end" class="tick">${y.toFixed(2)}</text>`);
  }
  const ticks =
    o.xTicks ?? Array.from({ length: 5 }, (_, i) => o.xMin + ((o.xMax - o.xMin) * i) / 4).map((x) => ({ x, label: x.toFixed(2) }));
  for (const t of ticks)
    parts.push(`<text x="${r2(xs(t.x))}" y="${top + ph + 14}" text-anchor="middle" class="tick">${e(t.label)}</text>`);
  parts.push(`<text x="${left + pw / 2}" y="${top + ph + 30}" text-anchor="middle" class="axt">${e(o.xTitle)}</text>`);
  parts.push(`<text x="12" y="${top + ph / 2}" text-anchor="middle" class="axt" transform="rotate(-90 12 ${top + ph / 2})">${e(o.yTitle)}</text>`);
  (o.vlines ?? []).forEach((v, i) => {
    if (v.x < o.xMin || v.x > o.xMax) return;
    const xv = xs(v.x);
    const x = r2(xv);
    const rightHalf = xv > left + pw / 2;
    parts.push(`<line class="vline" x1="${x}" x2="${x}" y1="${top}" y2="${top + ph}" stroke="${v.color}" stroke-dasharray="4 3"/>`);
    parts.push(
      `<text x="${r2(xv + (rightHalf ? -4 : 4))}" y="${top + ph - 8 - 14 * i}" text-anchor="${rightHalf ? 'end' : 'start'}" class="tick vl" fill="${v.color}">${e(v.label)}</text>`,
    );
  });
  o.series.forEach((s) => {
    const pts = s.points.filter((p) => p.y !== null) as { x: number; y: number; low?: number | null; high?: number | null }[];
    if (pts.length > 1)
      parts.push(
        `<polyline class="series" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ''} points="${pts
          .map((p) => `${r2(xs(p.x))},${r2(ys(p.y))}`)
          .join(' ')}"/>`,
      );
    for (const p of pts) {
      if (typeof p.low === 'number' && typeof p.high === 'number')
        parts.push(
          `<line class="ci" x1="${r2(xs(p.x))}" x2="${r2(xs(p.x))}" y1="${r2(ys(p.low))}" y2="${r2(ys(p.high))}" stroke="${s.color}" stroke-width="1.5"/>`,
        );
      if (s.points.length <= 40)
        parts.push(
          `<circle cx="${r2(xs(p.x))}" cy="${r2(ys(p.y))}" r="3" fill="${s.color}"><title>${e(`${s.name}: ${p.y.toFixed(3)}` +
            (typeof p.low === 'number' && typeof p.high === 'number' ? ` [${p.low.toFixed(3)}, ${p.high.toFixed(3)}]` : ''))}</title></circle>`,
        );
    }
  });
  o.series.forEach((s, i) => {
    const lx = left + (i % 3) * Math.floor(pw / 3);
    const ly = top + ph + 44 + 14 * Math.floor(i / 3);
    parts.push(`<rect x="${lx}" y="${ly - 8}" width="10" height="10" fill="${s.color}"/>`);
    parts.push(`<text x="${lx + 14}" y="${ly + 1}" class="tick">${e(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}

/** Grouped vertical bars: one group per bin, one bar per series (counts). */
export function histogram(o: { title: string; binLabels: string[]; series: { name: string; color: string; counts: number[] }[]; xTitle: string }): string {
  const w = 460;
  const h = 240;
  const left = 46;
  const top = 26;
  const bottom = 56;
  const pw = w - left - 12;
  const ph = h - top - bottom;
  const max = maxOf(o.series.flatMap((s) => s.counts), 1);
  const gw = pw / Math.max(1, o.binLabels.length);
  const bw = (gw - 2) / Math.max(1, o.series.length);
  const parts = [svgOpen(w, h, o.title, 'chart hist')];
  parts.push(`<text x="${left}" y="14" class="ct">${e(o.title)}</text>`);
  parts.push(`<line x1="${left}" x2="${left + pw}" y1="${top + ph}" y2="${top + ph}" stroke="#888"/>`);
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    const y = top + ph - (ph * i) / 4;
    parts.push(`<text x="${left - 4}" y="${r2(y + 4)}" text-anchor="end" class="tick">${Math.round(v)}</text>`);
  }
  o.series.forEach((s, si) =>
    s.counts.forEach((c, b) => {
      const bh = (c / max) * ph;
      parts.push(
        `<rect class="bar" x="${r2(left + gw * b + 1 + bw * si)}" y="${r2(top + ph - bh)}" width="${r2(bw)}" height="${r2(bh)}" fill="${s.color}">` +
          `<title>${e(`${s.name}, ${o.binLabels[b]}: ${c}`)}</title></rect>`,
      );
    }),
  );
  const every = Math.max(1, Math.ceil(o.binLabels.length / 5));
  o.binLabels.forEach((l, b) => {
    if (b % every === 0) parts.push(`<text x="${r2(left + gw * b)}" y="${top + ph + 14}" class="tick">${e(l)}</text>`);
  });
  parts.push(`<text x="${left + pw / 2}" y="${top + ph + 30}" text-anchor="middle" class="axt">${e(o.xTitle)}</text>`);
  o.series.forEach((s, i) => {
    parts.push(`<rect x="${left + 140 * i}" y="${h - 14}" width="10" height="10" fill="${s.color}"/>`);
    parts.push(`<text x="${left + 140 * i + 14}" y="${h - 5}" class="tick">${e(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}

/** Horizontal bars with interval whiskers on a [min, max] axis, and an optional reference line. */
export function hbars(o: {
  title: string;
  bars: { label: string; value: number | null; low?: number | null; high?: number | null; color?: string }[];
  min: number;
  max: number;
  reference?: { value: number; label: string };
}): string {
  const left = Math.min(260, Math.max(90, 8 + 7 * maxOf(o.bars.map((b) => b.label.length), 0)));
  const w = left + 300;
  const bh = 18;
  const top = 30;
  const h = top + (bh + 6) * o.bars.length + 24;
  const pw = w - left - 50;
  const xs = (v: number): number => left + ((v - o.min) / (o.max - o.min || 1)) * pw;
  const parts = [svgOpen(w, h, o.title, 'chart hbar')];
  parts.push(`<text x="8" y="14" class="ct">${e(o.title)}</text>`);
  o.bars.forEach((b, i) => {
    const y = top + (bh + 6) * i;
    parts.push(`<text x="${left - 6}" y="${y + bh - 5}" text-anchor="end" class="tick">${e(b.label)}</text>`);
    if (b.value === null) return;
    const x0 = xs(Math.max(o.min, Math.min(0, o.max)));
    const x1 = xs(b.value);
    parts.push(
      `<rect class="bar" x="${r2(Math.min(x0, x1))}" y="${y}" width="${r2(Math.abs(x1 - x0))}" height="${bh}" fill="${b.color ?? SERIES_COLORS[0]}">` +
        `<title>${e(`${b.label}: ${b.value.toFixed(3)}`)}</title></rect>`,
    );
    if (typeof b.low === 'number' && typeof b.high === 'number') {
      const ym = y + bh / 2;
      parts.push(`<line class="ci" x1="${r2(xs(b.low))}" x2="${r2(xs(b.high))}" y1="${ym}" y2="${ym}" stroke="#000" stroke-width="1.5"/>`);
      parts.push(`<line x1="${r2(xs(b.low))}" x2="${r2(xs(b.low))}" y1="${ym - 4}" y2="${ym + 4}" stroke="#000"/>`);
      parts.push(`<line x1="${r2(xs(b.high))}" x2="${r2(xs(b.high))}" y1="${ym - 4}" y2="${ym + 4}" stroke="#000"/>`);
    }
    parts.push(`<text x="${r2(Math.max(x1, typeof b.high === 'number' ? xs(b.high) : x1) + 4)}" y="${y + bh - 5}" class="tick">${b.value.toFixed(3)}</text>`);
  });
  if (o.reference) {
    const x = r2(xs(o.reference.value));
    parts.push(`<line x1="${x}" x2="${x}" y1="${top - 6}" y2="${h - 20}" stroke="#d00" stroke-dasharray="4 3"/>`);
    parts.push(`<text x="${x}" y="${h - 6}" text-anchor="middle" class="tick" fill="#d00">${e(o.reference.label)}</text>`);
  }
  parts.push('</svg>');
  return parts.join('');
}
