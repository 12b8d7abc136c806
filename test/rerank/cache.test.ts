import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTinyCrossEncoder, TINY_VOCAB, tinyCrossTokenWeight } from '../../scripts/build-tiny-model.js';
import { rerankLists } from '../../src/rerank/apply.js';
import { pairHash, RerankCache, RERANK_CACHE_SCHEMA_VERSION } from '../../src/rerank/cache.js';
import { createReranker } from '../../src/rerank/registry.js';
import { resolveRerankSpec } from '../../src/rerank/spec.js';
import type { Reranker } from '../../src/rerank/types.js';
import { buildKeywordIndex } from '../../src/retrieve/bm25.js';
import type { Chunk } from '../../src/types.js';
import { thrown } from '../helpers/errors.js';

let root: string;
beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'rs-rerank-cache-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('RerankCache (SQLite)', () => {
  it('round-trips float64 scores bit-exactly, across a reopen', () => {
    const file = path.join(root, 'a', 'rerank.sqlite');
    const values = [0.1 + 0.2, -1e-300, Number.MIN_VALUE, Number.MAX_VALUE, -3.5, 7];
    const pairs = values.map((_, i) => pairHash('question', `chunk ${i}`));
    const c1 = RerankCache.open(file);
    c1.put('m1', pairs.map((p, i) => [p, values[i]] as const));
    c1.close();
    const c2 = RerankCache.open(file);
    expect(c2.get('m1', pairs)).toEqual(values);
    expect(Object.is(c2.get('m1', [pairs[0]])[0], 0.30000000000000004)).toBe(true);
    expect(c2.get('m2', pairs)).toEqual(values.map(() => undefined)); // another reranker key shares nothing
    expect(c2.get('m1', [pairHash('other question', 'chunk 0')])).toEqual([undefined]);
    expect(c2.stats()).toMatchObject({ entries: values.length, hits: values.length + 1, misses: values.length + 1, puts: 0 });
    c2.close();
    c2.close();
  });

  it('a put replaces the stored score; duplicates inside one get are answered each', () => {
    const c = RerankCache.open(path.join(root, 'b.sqlite'));
    const p = pairHash('q', 't');
    c.put('m', [[p, 1]]);
    c.put('m', [[p, 2]]);
    expect(c.get('m', [p, p])).toEqual([2, 2]);
    c.close();
  });

  it('a different schema version drops the stored scores', () => {
    const file = path.join(root, 'c.sqlite');
    const c = RerankCache.open(file);
    c.put('m', [[pairHash('q', 't'), 1]]);
    c.close();
    const Database = createRequire(import.meta.url)('better-sqlite3') as new (f: string) => {
      prepare(s: string): { run(...a: unknown[]): unknown };
      close(): void;
    };
    const db = new Database(file);
    db.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run(RERANK_CACHE_SCHEMA_VERSION + 1);
    db.close();
    const again = RerankCache.open(file);
    expect(again.get('m', [pairHash('q', 't')])).toEqual([undefined]);
    expect(again.stats().entries).toBe(0);
    again.close();
  });

  it('a file that is not SQLite is CACHE_FAILED naming the file; a non-finite score is refused', () => {
    const bad = path.join(root, 'not-sqlite.sqlite');
    writeFileSync(bad, 'this is not a database, just text that is long enough to have a header '.repeat(4));
    const e = thrown(() => RerankCache.open(bad).get('m', [pairHash('q', 't')]));
    expect(e.code).toBe('CACHE_FAILED');
    expect(e.location.file).toBe(bad);
    const c = RerankCache.open(path.join(root, 'd.sqlite'));
    expect(thrown(() => c.put('m', [[pairHash('q', 't'), Number.POSITIVE_INFINITY]])).code).toBe('CACHE_FAILED');
    c.close();
  });
});

describe('the reranker path end to end on the tiny cross-encoder (BM25 → rerank → cache)', () => {
  it('reranks BM25 lists by the tiny logit, and a warm rerun through the SQLite cache scores nothing', async () => {
    const modelDir = (await buildTinyCrossEncoder(path.join(root, 'tiny-ce'))).dir;
    const texts = ['reset the router', 'the router a b', 'pump seal kit', 'how do i get my money back', 'reset a b c d e'];
    const chunks: Chunk[] = texts.map((text, i) => ({ id: `d${i}#0`, docId: `d${i}`, ordinal: 0, text, start: 0, end: text.length, tokens: text.split(' ').length }));
    const byId = new Map(chunks.map((c) => [c.id, c.text]));
    const textOf = (id: string): string => byId.get(id)!;
    const index = buildKeywordIndex(chunks);
    const questions = [{ id: 'q1', text: 'how do i reset the router' }, { id: 'q2', text: 'get my money back' }];
    const D = 2;
    const lists = questions.map((q) => index.search(q.text, 5));
    expect(lists[0].length).toBeGreaterThan(D); // so the kept-below part is exercised
    const spec = resolveRerankSpec({ model: `transformers:${modelDir}`, depth: D })!;
    const cacheFile = path.join(root, 'e2e', 'rerank.sqlite');

    const run = async (): Promise<{ out: Awaited<ReturnType<typeof rerankLists>>; reranker: Reranker }> => {
      const reranker = await createReranker(spec, { cacheDir: path.join(root, 'e2e') });
      const cache = RerankCache.open(cacheFile);
      try {
        return { out: await rerankLists(reranker, questions, lists, D, textOf, { cache }), reranker };
      } finally {
        cache.close();
        await reranker.close();
      }
    };
    const cold = await run();
    // BM25 ranks d0 ("reset the router") above d1 ("the router a b"); the tiny logit subtracts 0.375 · Σu over the
    // chunk's tokens, and u(a) + u(b) < u(reset), so d1 now comes first; d4 is kept below at m − 1.
    const u = (t: string): number => tinyCrossTokenWeight(TINY_VOCAB.indexOf(t));
    expect(u('a') + u('b')).toBeLessThan(u('reset'));
    expect(lists[0].map((h) => h.id)).toEqual(['d0#0', 'd1#0', 'd4#0']);
    expect(cold.out.lists[0].map((h) => h.id)).toEqual(['d1#0', 'd0#0', 'd4#0']);
    expect(cold.out.lists[0][2].score).toBe(cold.out.lists[0][1].score - 1);
    const expectedPairs = lists.reduce((n, l) => n + Math.min(D, l.length), 0);
    expect(cold.out.stats).toMatchObject({ pairs: expectedPairs, cacheHits: 0, cacheMisses: expectedPairs });
    expect(cold.reranker.stats().pairs).toBe(expectedPairs);

    // The top D of each list come out ordered by the tiny model's own scores of those pairs (tie rule on equal scores).
    const check = await createReranker(spec, { cacheDir: path.join(root, 'e2e') });
    for (let i = 0; i < questions.length; i++) {
      const top = lists[i].slice(0, D);
      const s = await check.score(questions[i].text, top.map((h) => textOf(h.id)));
      const want = top.map((h, j) => ({ id: h.id, score: s[j] })).sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : -1));
      expect(cold.out.lists[i].slice(0, top.length).map((h) => h.id)).toEqual(want.map((h) => h.id));
      expect(cold.out.lists[i].slice(D).map((h) => h.id)).toEqual(lists[i].slice(D).map((h) => h.id));
    }
    await check.close();

    const warm = await run();
    expect(warm.out.stats).toMatchObject({ cacheHits: expectedPairs, cacheMisses: 0, scoreSeconds: 0 });
    expect(warm.reranker.stats().pairs).toBe(0);
    expect(warm.out.lists).toEqual(cold.out.lists);
  });
});
