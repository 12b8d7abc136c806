/**
 * Opens report.html in headless Chromium from a file:// URL: no console errors, no network, the charts drew, the
 * drill-down renders, a <script> in a question or document id does not run, and a screenshot is a real PNG.
 * Skipped when /usr/bin/chromium is absent (Debian: apt-get install -y chromium).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { analyze } from '../../src/report/analyze.js';
import { renderReports } from '../../src/report/render.js';
import type { ConfigResult, Mode } from '../../src/types.js';
import { seededRandom } from '../../src/score/stats.js';
import { question, row, spec, sweep } from './fixtures.js';

const CHROMIUM = '/usr/bin/chromium';
const XSS_Q = '<script>window.__pwned = 1; alert(1)</script><img src=x onerror="window.__pwned = 2">';
const XSS_DOC = 'faq/<script>window.__pwned=3</script>.md';

const CHUNKINGS = ['none', 'cs256-ov32'];
const KS = [3, 5, 10];
const GROUPS: [Mode, string | null][] = [
  ['keyword', null],
  ['semantic', 'use-lite'],
  ['semantic', 'glove-100d'],
  ['hybrid', 'use-lite'],
];

function fixture() {
  const rand = seededRandom(5);
  const qs = Array.from({ length: 24 }, (_, j) =>
    question(`q${j}`, { [j === 0 ? XSS_DOC : `guides/doc${j}.md`]: 1 }, [j % 2 ? 'paraphrase' : 'part-number'], j === 0 ? XSS_Q : `how do I fix problem ${j}?`),
  );
  const rows: ConfigResult[] = [];
  for (const ck of CHUNKINGS)
    for (const [mode, emb] of GROUPS)
      for (const k of KS) {
        const base = 0.3 + rand() * 0.5;
        const retrieved = qs.map((q) =>
          Array.from({ length: k }, (_, r) => {
            const doc = r === 1 ? Object.keys(q.relevant)[0] : `other/doc${r}.md`;
            return { chunkId: `${doc}#${r}`, docId: doc, score: mode === 'semantic' ? 0.95 - r * 0.05 - rand() * 0.1 : 1 / (60 + r) };
          }),
        );
        rows.push(
          row(spec({ chunkingKey: ck, mode, embedding: emb, k }), qs, { ndcg: qs.map(() => Math.min(1, base + rand() * 0.3)) }, {
            retrieved,
            firstRelevant: qs.map(() => 2),
          }),
        );
      }
  return sweep(qs, rows, { primaryMetric: 'ndcg@5' });
}

describe.skipIf(!existsSync(CHROMIUM))('report.html in headless Chromium (skipped: /usr/bin/chromium not installed)', () => {
  let dir: string;
  let ctx: BrowserContext;
  let page: Page;
  let fileUrl: string;
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  const requests: string[] = [];
  const dialogs: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'report-html-'));
    const result = fixture();
    const html = renderReports(result, analyze(result, { resamples: 1000 }))['report.html'];
    const file = path.join(dir, 'report.html');
    writeFileSync(file, html);
    fileUrl = pathToFileURL(file).href;
    ctx = await chromium.launchPersistentContext(path.join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 900 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await ctx.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('request', (r) => requests.push(r.url()));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(fileUrl, { waitUntil: 'load' });
  });

  afterAll(async () => {
    await ctx?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('loads with no console error and no request other than the file itself', () => {
    expect(consoleErrors).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(requests).toEqual([fileUrl]);
  });

  it('draws one heatmap per mode and model with a cell per chunking × k', async () => {
    expect(await page.locator('#heatmaps svg').count()).toBe(GROUPS.length);
    expect(await page.locator('#heatmaps rect.cell').count()).toBe(GROUPS.length * CHUNKINGS.length * KS.length);
    expect(await page.locator('#by-k svg polyline.series').count()).toBe(GROUPS.length * CHUNKINGS.length);
    expect(await page.locator('#by-k svg line.ci').count()).toBe(GROUPS.length * CHUNKINGS.length * KS.length);
    expect(await page.locator('#cutoffs svg').count()).toBe(2 * 2); // two semantic models: curve + histogram each
    expect(await page.locator('#models svg rect.bar').count()).toBe(2 * 2);
  });

  it('a <script> in a question and in a document id shows as text and never runs', async () => {
    expect(dialogs).toEqual([]);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    const text = await page.locator('#drill-detail .qtext').textContent();
    expect(text).toBe(XSS_Q);
    expect(await page.locator('#drill-detail').textContent()).toContain('faq/<script>window.__pwned=3</script>.md');
    expect(await page.locator('#drill-detail script, #drill-detail img').count()).toBe(0);
  });

  it('the drill-down follows the question list and the filter', async () => {
    await page.fill('#drill-filter', 'problem 7');
    expect(await page.locator('#drill-list option').count()).toBe(1);
    expect(await page.locator('#drill-detail h3').textContent()).toBe('Question q7');
    // One row per candidate (k = 5): chunkings × groups.
    expect(await page.locator('#drill-detail tbody tr').count()).toBe(CHUNKINGS.length * GROUPS.length);
    expect(await page.locator('#drill-detail tbody tr').first().locator('.chip.rel').count()).toBe(1);
    await page.fill('#drill-filter', '');
    expect(await page.locator('#drill-list option').count()).toBe(24);
  });

  it('the matrix sorts by a clicked column', async () => {
    const th = page.locator('#matrix-table thead th', { hasText: /^k$/ });
    await th.click();
    const first = await page.locator('#matrix-table tbody tr td:nth-child(5)').allTextContents();
    expect(first.map(Number)).toEqual([...first.map(Number)].sort((a, b) => b - a));
    await th.click();
    const second = await page.locator('#matrix-table tbody tr td:nth-child(5)').allTextContents();
    expect(second.map(Number)).toEqual([...second.map(Number)].sort((a, b) => a - b));
  });

  it('at 1400 px the page never scrolls sideways: a wide table scrolls inside its own box with the id column fixed', async () => {
    await page.setViewportSize({ width: 1400, height: 900 });
    try {
      // Evaluated in the page (a string: the DOM types are not in this project's lib).
      const m = (await page.evaluate(`(() => {
        const tables = Array.from(document.querySelectorAll('table'));
        const t = document.getElementById('matrix-table');
        return {
          pageWidth: document.documentElement.scrollWidth,
          tables: tables.length,
          boxed: tables.filter((x) => x.getBoundingClientRect().right <= 1400 && getComputedStyle(x).overflowX === 'auto').length,
          sticky: tables.filter((x) => x.rows[0] && getComputedStyle(x.rows[0].cells[0]).position === 'sticky').length,
          matrixScrolls: t.scrollWidth > t.clientWidth,
        };
      })()`)) as { pageWidth: number; tables: number; boxed: number; sticky: number; matrixScrolls: boolean };
      expect(m.pageWidth).toBeLessThanOrEqual(1400);
      expect(m.boxed).toBe(m.tables);
      expect(m.sticky).toBe(m.tables);
      // The full matrix is wider than the page: it scrolls in its own box, its first (id) column stays in place.
      expect(m.matrixScrolls).toBe(true);
      const first = page.locator('#matrix-table tbody tr:first-child td:first-child');
      const second = page.locator('#matrix-table tbody tr:first-child td:nth-child(2)');
      const [f0, s0] = [await first.boundingBox(), await second.boundingBox()];
      await page.evaluate(`document.getElementById('matrix-table').scrollLeft = 400`);
      const [f1, s1] = [await first.boundingBox(), await second.boundingBox()];
      // The id cell stays within a border's width of where it was; the next cell moved with the scroll.
      expect(Math.abs(f1!.x - f0!.x)).toBeLessThan(2);
      expect(s0!.x - s1!.x).toBeGreaterThan(100);
      await page.evaluate(`document.getElementById('matrix-table').scrollLeft = 0`);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('a full-page screenshot is a non-trivial PNG', async () => {
    const shot = path.join(dir, 'report.png');
    await page.goto(fileUrl, { waitUntil: 'load' });
    await page.screenshot({ path: shot, fullPage: true });
    const png = readFileSync(shot);
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const width = png.readUInt32BE(16);
    const height = png.readUInt32BE(20);
    expect(width).toBe(1280);
    expect(height).toBeGreaterThan(3000);
    expect(png.length).toBeGreaterThan(100_000);
    if (process.env.REPORT_SCREENSHOT) writeFileSync(process.env.REPORT_SCREENSHOT, png);
  });
});
