/**
 * Issue 24 §1: a checkpoint is used only when it is what a live retriever of its unit could have returned. Each test
 * alters the cached state in one way, re-runs the sweep on the tiny fixture and asserts: the file is named in a
 * warning, the unit is recomputed (written again), and every metric equals the reference run's.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { CheckpointStore } from '../../src/run/checkpoint.js';
import { rankingListsProblem } from '../../src/run/verify.js';
import type { SweepResult } from '../../src/types.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');

function configIn(cacheDir: string) {
  return parseConfig({
    name: 'tiny',
    dataset: { path: tiny },
    chunking: { sizes: ['none', 16], overlap: 4 },
    topK: [1, 3, 5],
    modes: ['keyword'],
    primaryMetric: 'ndcg@3',
    cacheDir,
  });
}

async function sweep(cacheDir: string): Promise<SweepResult> {
  const { result } = await runSweep(configIn(cacheDir), { now: () => new Date('2026-01-01T00:00:00Z') });
  return result;
}

/** Every metric mean and every retrieved list of every row, by row id. */
function metricsOf(r: SweepResult): Record<string, unknown> {
  expect(r.configs.length).toBe(6);
  for (const c of r.configs) expect(Object.keys(c.means).length).toBeGreaterThan(0);
  return Object.fromEntries(r.configs.map((c) => [c.config.id, { status: c.status, means: c.means, perQuery: c.perQuery.map((q) => [q.qid, q.retrieved]) }]));
}

interface Cp {
  file: string;
  key: string;
  body: { depth: number; buildSeconds: number; queryMs: number; lists: [string, number][][] };
}

let reference: SweepResult;
let warmCache: string;

/** A copy of the warm cache folder, and its ranking checkpoints (keyword on `none` first: it has whole-doc ids). */
function freshCopy(): { cacheDir: string; cps: Cp[] } {
  const cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-verify-')), 'c');
  cpSync(warmCache, cacheDir, { recursive: true });
  const dir = path.join(cacheDir, 'checkpoints');
  const cps = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => {
      const text = readFileSync(path.join(dir, f), 'utf8');
      const nl = text.indexOf('\n');
      return { file: path.join(dir, f), key: f.slice(0, -5), body: JSON.parse(text.slice(nl + 1)) as Cp['body'] };
    });
  return { cacheDir, cps };
}

/** Writes `body` under `cp`'s file with a correct header (so only the content checks can catch it). */
function rewrite(cp: Cp, body: unknown, key = cp.key): void {
  const b = JSON.stringify(body);
  writeFileSync(cp.file, `${JSON.stringify({ format: 2, key, sha256: createHash('sha256').update(b).digest('hex') })}\n${b}`);
}

/** Re-runs on the altered copy; asserts detection (a warning naming the file), recomputation and equal metrics. */
async function expectRecomputed(cacheDir: string, file: string, because: RegExp): Promise<string> {
  const r = await sweep(cacheDir);
  const w = (r.manifest.warnings as string[]).find((m) => m.includes(file));
  expect(w).toBeDefined();
  expect(w).toMatch(because);
  expect(w).toMatch(/discarded and is recomputed/);
  const cps = r.manifest.checkpoints as { discarded: number; written: number };
  expect(cps.discarded).toBe(1);
  expect(cps.written).toBe(1);
  expect(metricsOf(r)).toEqual(metricsOf(reference));
  // The rewritten checkpoint is trusted again on the next run.
  const again = await sweep(cacheDir);
  expect((again.manifest.checkpoints as { discarded: number; written: number }).discarded).toBe(0);
  return w!;
}

beforeAll(async () => {
  warmCache = path.join(mkdtempSync(path.join(tmpdir(), 'rs-verify-')), 'c');
  reference = await sweep(warmCache);
  expect(reference.configs.every((c) => c.status === 'ok')).toBe(true);
});

describe('checkpoints are verified on read (issue 24)', () => {
  /** A checkpoint with at least two hits of different scores in some list, and that list's index. */
  function withOrder(cps: Cp[]): { cp: Cp; q: number } {
    for (const cp of cps) {
      const q = cp.body.lists.findIndex((l) => l.length >= 2 && l[0][1] !== l[1][1]);
      if (q >= 0) return { cp, q };
    }
    throw new Error('no list with two distinct scores');
  }

  it('ids reordered inside a list (hash fixed up): out of ranking order, recomputed', async () => {
    const { cacheDir, cps } = freshCopy();
    const { cp, q } = withOrder(cps);
    const lists = cp.body.lists.map((l) => [...l]);
    [lists[q][0], lists[q][1]] = [lists[q][1], lists[q][0]];
    rewrite(cp, { ...cp.body, lists });
    await expectRecomputed(cacheDir, cp.file, /not in ranking order/);
  });

  it('ids swapped but scores kept in place (order valid, ids moved): caught by the content hash', async () => {
    const { cacheDir, cps } = freshCopy();
    const { cp, q } = withOrder(cps);
    const text = readFileSync(cp.file, 'utf8');
    const [a, b] = [cp.body.lists[q][0][0], cp.body.lists[q][1][0]];
    const nl = text.indexOf('\n');
    const body = JSON.parse(text.slice(nl + 1)) as Cp['body'];
    body.lists[q][0][0] = b;
    body.lists[q][1][0] = a;
    writeFileSync(cp.file, `${text.slice(0, nl)}\n${JSON.stringify(body)}`);
    await expectRecomputed(cacheDir, cp.file, /does not match its content hash/);
  });

  it('an unknown id (hash fixed up): not an id of the chunking, recomputed', async () => {
    const { cacheDir, cps } = freshCopy();
    const cp = cps.find((c) => c.body.lists.some((l) => l.length > 0))!;
    const q = cp.body.lists.findIndex((l) => l.length > 0);
    const lists = cp.body.lists.map((l) => [...l]);
    lists[q][0] = ['no-such-doc.md#0', lists[q][0][1]];
    rewrite(cp, { ...cp.body, lists });
    await expectRecomputed(cacheDir, cp.file, /"no-such-doc.md#0" is not an id of the unit's chunking/);
  });

  it('a "NaN" score (hash fixed up): not a finite number, recomputed', async () => {
    const { cacheDir, cps } = freshCopy();
    const cp = cps.find((c) => c.body.lists.some((l) => l.length > 0))!;
    const q = cp.body.lists.findIndex((l) => l.length > 0);
    const lists: unknown[][] = cp.body.lists.map((l) => [...l]);
    lists[q][0] = [cp.body.lists[q][0][0], 'NaN'];
    rewrite(cp, { ...cp.body, lists });
    await expectRecomputed(cacheDir, cp.file, /has score "NaN", not a finite number/);
  });

  it('fewer lists than questions (hash fixed up): named, recomputed, no TypeError', async () => {
    const { cacheDir, cps } = freshCopy();
    const cp = cps[0];
    rewrite(cp, { ...cp.body, lists: cp.body.lists.slice(0, 2) });
    await expectRecomputed(cacheDir, cp.file, new RegExp(`holds 2 lists for ${cp.body.lists.length} questions`));
  });

  it('a list longer than its stored depth (hash fixed up): recomputed', async () => {
    const { cacheDir, cps } = freshCopy();
    const cp = cps.find((c) => c.body.lists.some((l) => l.length >= 2))!;
    rewrite(cp, { ...cp.body, depth: 1 });
    await expectRecomputed(cacheDir, cp.file, /more than its depth 1/);
  });

  it("another unit's checkpoint copied under this key: recognised as someone else's, recomputed", async () => {
    const { cacheDir, cps } = freshCopy();
    expect(cps.length).toBeGreaterThanOrEqual(2);
    writeFileSync(cps[0].file, readFileSync(cps[1].file));
    await expectRecomputed(cacheDir, cps[0].file, /belongs to another unit/);
  });

  it('a checkpoint of the earlier format (no header line) is recomputed once', async () => {
    const { cacheDir, cps } = freshCopy();
    writeFileSync(cps[0].file, JSON.stringify(cps[0].body));
    await expectRecomputed(cacheDir, cps[0].file, /earlier release/);
  });

  it('a truncated checkpoint is recomputed', async () => {
    const { cacheDir, cps } = freshCopy();
    writeFileSync(cps[0].file, readFileSync(cps[0].file).subarray(0, 40));
    await expectRecomputed(cacheDir, cps[0].file, /discarded/);
  });
});

describe('chunk files are verified on read (issue 24)', () => {
  it('a chunk range moved inside its document: caught by the checksum, recomputed, equal metrics', async () => {
    const { cacheDir } = freshCopy();
    const dir = path.join(cacheDir, 'checkpoints');
    // The cs16 chunking has several chunks per document; shift one chunk's start by one character (still in bounds).
    const files = readdirSync(dir).filter((f) => f.endsWith('.chunks'));
    const sizes = files.map((f) => readFileSync(path.join(dir, f)).readUInt32LE(8));
    const file = path.join(dir, files[sizes.indexOf(Math.max(...sizes))]);
    const buf = readFileSync(file);
    const start = buf.readInt32LE(76 + 4 * 2);
    const end = buf.readInt32LE(76 + 4 * 3);
    expect(end - start).toBeGreaterThan(1);
    buf.writeInt32LE(start + 1, 76 + 4 * 2);
    writeFileSync(file, buf);
    await expectRecomputed(cacheDir, file, /does not match its checksum/);
  });

  it("another chunking's file under this key is recognised", async () => {
    const { cacheDir } = freshCopy();
    const dir = path.join(cacheDir, 'checkpoints');
    const files = readdirSync(dir).filter((f) => f.endsWith('.chunks'));
    expect(files.length).toBe(2);
    const file = path.join(dir, files[0]);
    writeFileSync(file, readFileSync(path.join(dir, files[1])));
    await expectRecomputed(cacheDir, file, /belongs to another chunking/);
  });
});

describe('rankingListsProblem', () => {
  const ok = [[['b', 2], ['a', 1]], []];
  it('accepts lists in rule order (ties broken by id descending)', () => {
    expect(rankingListsProblem(ok, { questions: 2, depth: 2 })).toBe(null);
    expect(rankingListsProblem([[['b', 1], ['a', 1]]], { questions: 1, depth: 2 })).toBe(null);
  });
  it('names each kind of problem without throwing', () => {
    expect(rankingListsProblem(null, { questions: 2, depth: 2 })).toMatch(/instead of a list per question/);
    expect(rankingListsProblem([[['a', 1], ['b', 1]]], { questions: 1, depth: 2 })).toMatch(/not in ranking order at hit 2/);
    expect(rankingListsProblem([[['a', 1], ['a', 0]]], { questions: 1, depth: 2 })).toMatch(/appears twice/);
    expect(rankingListsProblem([[['a', Infinity]]], { questions: 1, depth: 2 })).toMatch(/not a finite number/);
    expect(rankingListsProblem([[['a']]], { questions: 1, depth: 2 })).toMatch(/not \[id, score\]/);
    expect(rankingListsProblem([[['x', 1]]], { questions: 1, depth: 2, isKnown: (id) => id !== 'x' })).toMatch(/"x" is not an id/);
  });
  it('a store without expectations still checks shape and order', () => {
    const store = new CheckpointStore(mkdtempSync(path.join(tmpdir(), 'rs-verify-')));
    store.put('k', { lists: [[{ id: 'b', score: 2 }, { id: 'a', score: 1 }]], depth: 2, buildSeconds: 0, queryMs: 0 });
    expect(store.get('k', 2)?.lists).toEqual([[{ id: 'b', score: 2 }, { id: 'a', score: 1 }]]);
    expect(store.get('k', 3)).toBe(undefined); // too shallow: recomputed, not discarded
    expect(store.discarded).toEqual([]);
  });
});
