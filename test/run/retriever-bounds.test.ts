/**
 * Issue 24 §2/§3: a plug-in retriever's list is checked as it arrives (more than depth × LIST_MARGIN hits is an error
 * for that question), and a retriever factory gets the retriever's `timeoutMs`; one that resolves after it is closed.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { collectLists, factoryWithTimeout, LIST_MARGIN } from '../../src/run/retrieve.js';
import type { RetrieverFactory } from '../../src/retrieve/retriever.js';
import { rejection } from '../helpers/errors.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');

describe('a retriever list is bounded as it arrives', () => {
  const questions = [{ id: 'q1', text: 'a' }, { id: 'q2', text: 'b' }];
  const many = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `d${i}`, score: n - i }));

  it(`depth 3: ${3 * LIST_MARGIN} hits pass (cut to 3), ${3 * LIST_MARGIN + 1} fail for that question, naming the limit`, async () => {
    const ok = await collectLists('r', { search: async () => many(3 * LIST_MARGIN) }, questions, 3, { resolveId: (id) => id });
    expect(ok.lists.map((l) => l.map((h) => h.id))).toEqual([['d0', 'd1', 'd2'], ['d0', 'd1', 'd2']]);
    let searched = 0;
    const e = await rejection(
      collectLists('r', { search: async (q) => (searched++, q.id === 'q1' ? many(3 * LIST_MARGIN + 1) : many(3)) }, questions, 3, {
        resolveId: (id) => id,
        concurrency: 1,
      }),
    );
    expect(e.code).toBe('RETRIEVER_FAILED');
    expect(e.message).toBe(`retriever r, question q1: search returned ${3 * LIST_MARGIN + 1} hits for depth 3, more than ${LIST_MARGIN} × the depth asked (${3 * LIST_MARGIN})`);
    expect(searched).toBe(1); // q2 was never asked: the first list failed as it arrived
  });

  it('searchBatch lists are checked the same way', async () => {
    const e = await rejection(
      collectLists('r', { search: async () => [], searchBatch: async () => [many(1), many(2 * LIST_MARGIN + 1)] }, questions, 2, { resolveId: (id) => id }),
    );
    expect(e.message).toContain('question q2: search returned 21 hits for depth 2');
  });
});

describe('a retriever factory gets the retriever timeoutMs', () => {
  it('a factory that never resolves fails its rows after timeoutMs; the rest of the grid runs', async () => {
    const never: RetrieverFactory = () => new Promise(() => {});
    const config = parseConfig({
      dataset: { path: tiny },
      topK: [1, 3],
      modes: ['keyword'],
      primaryMetric: 'ndcg@3',
      cacheDir: path.join(mkdtempSync(path.join(tmpdir(), 'rs-factory-')), 'c'),
    });
    const { result } = await runSweep(config, { retrievers: [{ name: 'never', factory: never, timeoutMs: 150 }] });
    const rows = result.configs.filter((c) => c.config.retriever === 'never');
    expect(rows.length).toBe(2);
    for (const r of rows) {
      expect(r.status).toBe('failed');
      expect(r.error).toMatch(/retriever never: its factory did not settle within 150 ms \(timeoutMs\)/);
    }
    expect(result.configs.filter((c) => c.config.retriever === 'keyword').every((c) => c.status === 'ok')).toBe(true);
  });
});

describe('a factory that resolves after its timeout', () => {
  it('factoryWithTimeout: the late retriever is closed, a late rejection is ignored, an on-time one is not closed', async () => {
    let release!: (r: { close: () => void }) => void;
    let closedResolve!: () => void;
    const closed = new Promise<void>((r) => (closedResolve = r));
    const late = new Promise<{ close: () => void }>((r) => (release = r));
    const outcomes: unknown[] = [];
    const e = await factoryWithTimeout('slow', late, 20, (o) => outcomes.push(o)).catch((x: unknown) => x);
    expect((e as { code?: string }).code).toBe('RETRIEVER_FAILED');
    release({ close: () => closedResolve() });
    await closed;
    await new Promise((r) => setImmediate(r));
    expect(outcomes).toEqual([{ closed: true }]);

    let rejectLate!: (e: Error) => void;
    const failing = new Promise<never>((_, j) => (rejectLate = j));
    await expect(factoryWithTimeout('bad', failing, 5)).rejects.toMatchObject({ code: 'RETRIEVER_FAILED' });
    rejectLate(new Error('late'));

    let onTimeClosed = 0;
    const r = await factoryWithTimeout('fast', Promise.resolve({ close: () => void onTimeClosed++ }), 1000);
    expect(typeof r.close).toBe('function');
    expect(onTimeClosed).toBe(0);
  });

  it('a close() that throws is reported, not raised', async () => {
    let release!: (r: { close: () => Promise<void> }) => void;
    const late = new Promise<{ close: () => Promise<void> }>((r) => (release = r));
    let heard!: (o: unknown) => void;
    const outcome = new Promise<unknown>((r) => (heard = r));
    await factoryWithTimeout('slow', late, 5, heard).catch(() => undefined);
    const boom = new Error('cannot close');
    release({ close: async () => Promise.reject(boom) });
    expect(await outcome).toEqual({ closed: false, error: boom });
  });

  it('in a sweep: the rows fail with the timeout and the retriever made late is closed', async () => {
    let closedResolve!: () => void;
    const closed = new Promise<void>((r) => (closedResolve = r));
    let made!: () => void;
    const gate = new Promise<void>((r) => (made = r));
    const slow: RetrieverFactory = async () => {
      await gate;
      return { search: () => [], close: () => closedResolve() };
    };
    const config = parseConfig({
      dataset: { path: tiny },
      topK: [1],
      modes: ['keyword'],
      primaryMetric: 'ndcg@1',
      cacheDir: path.join(mkdtempSync(path.join(tmpdir(), 'rs-factory-late-')), 'c'),
    });
    const { result } = await runSweep(config, { retrievers: [{ name: 'slow', factory: slow, timeoutMs: 50 }] });
    const rows = result.configs.filter((c) => c.config.retriever === 'slow');
    expect(rows.map((r) => r.status)).toEqual(['failed']);
    made();
    await closed; // resolves only when the sweep's late retriever is closed
  });
});

