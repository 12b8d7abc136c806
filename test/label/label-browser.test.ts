/**
 * The labelling page in headless Chromium, against `retrieval-sweep label` running as a child process: grading by
 * key and by click, undo, the token check, an injection payload in a passage that must not run, kill -9 of the CLI
 * mid-pool and a restart that resumes with nothing lost (counted in the judgments log and the labels file), and the
 * merge on SIGTERM. Skipped when /usr/bin/chromium is absent (.ci/run installs Debian's chromium).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { judgmentsLogPath, readJudgments } from '../../src/label/formats.js';
import { INJECTION, labelFixture } from './fixture.js';

const CHROMIUM = '/usr/bin/chromium';
const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

/** Starts the CLI's label command; resolves with the child and the URL it prints on stdout. */
function startCli(pool: string, labels: string): Promise<{ child: ChildProcess; url: string; exited: Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', 'label', pool, '--labels', labels, '--assessor', 'alice', '--port', '0'], {
      cwd: repo,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /^(http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+)$/m.exec(out);
      if (m) resolve({ child, url: m[1], exited });
    });
    void exited.then((code) => reject(new Error(`label exited with ${code}: ${err}`)));
  });
}

describe.skipIf(!existsSync(CHROMIUM))('label page in headless Chromium (skipped: /usr/bin/chromium not installed)', () => {
  const f = labelFixture([['q1', 'b.md'], ['q1', 'inj.md'], ['q1', 'c.md'], ['q2', 'a.md'], ['q2', 'c.md']]);
  let ctx: BrowserContext;
  let page: Page;
  const dialogs: string[] = [];
  const pageErrors: string[] = [];
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    ctx = await chromium.launchPersistentContext(path.join(f.dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await ctx.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('pageerror', (e) => pageErrors.push(e.message));
  });

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await ctx?.close();
    rmSync(f.dir, { recursive: true, force: true });
  });

  const onPair = (n: number) => page.locator('#qid', { hasText: new RegExp(`^Pair ${n} of`) }).waitFor();

  it('grades by key and click, undoes, shows the injection as text, survives kill -9 and resumes', async () => {
    const first = await startCli(f.pool, f.labels);
    children.push(first.child);
    const u = new URL(first.url);
    expect((await fetch(`${u.origin}/`)).status).toBe(403);
    expect((await fetch(`${u.origin}/api/state?token=wrong`)).status).toBe(403);

    await page.goto(first.url);
    await onPair(1);
    expect(await page.locator('#question').textContent()).toBe('How long do refunds take?');
    // Question words highlighted as <mark> text: "refunds" (plural of refund), "take", and "longer" (starts with long).
    expect(await page.locator('#passage mark').allTextContents()).toEqual(['refunds', 'take', 'longer']);
    await page.keyboard.press('2'); // pair 1 (b.md) by key
    await onPair(2);
    // The injection passage: shown as text, nothing ran, no element made from it.
    expect(await page.locator('#passage').textContent()).toBe(INJECTION);
    expect(await page.locator('#passage img, #passage script').count()).toBe(0);
    await page.click('button[data-grade="0"]'); // pair 2 by click
    await onPair(3);
    await page.keyboard.press('u'); // undo: back to pair 2
    await onPair(2);
    await page.keyboard.press('1');
    await onPair(3);
    await page.keyboard.press('3');
    await onPair(4);
    expect(await page.locator('#progress-text').textContent()).toContain('3 of 5 graded');
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);

    first.child.kill('SIGKILL');
    await first.exited;
    const log = judgmentsLogPath(f.labels);
    const before = readJudgments(log).judgments;
    expect(before.map((j) => j.action)).toEqual(['grade', 'grade', 'undo', 'grade', 'grade']);

    const second = await startCli(f.pool, f.labels);
    children.push(second.child);
    await page.goto(second.url);
    await onPair(4); // resumes at the first pair without a grade
    expect(await page.locator('#progress-text').textContent()).toContain('3 of 5 graded');
    await page.keyboard.press('0');
    await onPair(5);
    await page.click('#merge');
    await page.locator('#message', { hasText: /^merged into / }).waitFor();
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    expect(readJudgments(log).judgments.filter((j) => j.action === 'grade')).toHaveLength(5);
    const lines = readFileSync(f.labels, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { relevant: Record<string, number> });
    expect(lines[0].relevant).toEqual({ 'a.md': 3, 'b.md': 2, 'inj.md': 1, 'c.md': 3 });
    expect(lines[1].relevant).toEqual({ 'b.md': 3, 'a.md': 0 });
  });
});
