/**
 * Unit kind `keyword` (`<ck>.keyword`: wink BM25; `<ck>.keyword-lance-fts`: LanceDB full-text search): the index of
 * one chunking and one ranked list per scored question at the unit's depth. Input: its chunking. Value: a
 * `RankingValue`; checkpointed under the plan's key at the plan depth. A BM25 failure fails its rows (`keyword index on
 * <ck> failed: …`); a LanceDB one also warns, and a stalled LanceDB build names the FTS hang's remedy.
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_MEMORY_BYTES, memoryShares } from '../../config/memory.js';
import { keywordRetriever } from '../../retrieve/builtin.js';
import { lancedbKeywordRetriever } from '../../retrieve/lancedb.js';
import { collectLists } from '../retrieve.js';
import { noteProgress } from '../stall.js';
import { chunkingOf, computed, factoryContext, planDepthCheckpoint, resolverOf } from './ranking.js';
import { chunkCountOf, type UnitKindHandler } from './types.js';

/** What a stalled LanceDB unit's error tells the user to check (docs/lancedb.md, issue 26). */
export const LANCE_STALL_REMEDY =
  'LanceDB 0.31.0 can wait forever building a full-text index when its CPU pool has one thread (docs/lancedb.md, "The FTS build hang"): leave LANCE_CPU_THREADS and LANCE_FTS_NUM_SHARDS unset (the harness sets safe values) or set LANCE_CPU_THREADS ≥ 2 and LANCE_FTS_NUM_SHARDS below it';

const isFts = (params: Record<string, unknown>) => params.engine === 'lancedb-fts';
const ckOf = (id: string) => id.split('.')[0];

export const keywordUnit: UnitKindHandler = {
  kind: 'keyword',
  stage: 'keyword',
  waitingFor: 'its index build and first results',
  lane: () => 'keyword',
  remedy: (unit) => (isFts(unit.params) ? LANCE_STALL_REMEDY : undefined),
  key: async (unit) => unit.key,
  ...planDepthCheckpoint,
  async run(unit, inputs, ctx, watch) {
    const st = chunkingOf(unit, inputs);
    const depth = unit.depth!;
    const t0 = performance.now();
    if (!isFts(unit.params)) {
      const { k1, b } = ctx.config.bm25;
      watch.progress('the BM25 index build');
      // The build's postings spill sorted runs past its share of limits.memory (two builds may run at once).
      // Past its share of the finished indexes' memory, the index keeps its postings in a file (read per query term).
      const shares = memoryShares(ctx.config.limits?.memory ?? DEFAULT_MEMORY_BYTES);
      const builds = Math.max(1, ctx.config.concurrency);
      const spillBytes = Math.floor(shares.bm25BuildBytes / builds);
      const residentPostingsBytes = Math.floor(shares.bm25ResidentBytes / builds);
      const retriever = await keywordRetriever({ k1, b }, { onProgress: () => watch.progress(), spillBytes, residentPostingsBytes })(factoryContext(ctx, st, {}));
      try {
        const buildSeconds = (performance.now() - t0) / 1000;
        const { lists, queryMs } = await collectLists('keyword', retriever, ctx.questionsIn, depth, {
          resolveId: resolverOf(ctx, st),
          signal: ctx.signal,
          onProgress: () => noteProgress('BM25 searches'),
        });
        return computed({ lists, buildSeconds, queryMs, info: { params: retriever.describe?.() ?? {} } });
      } finally {
        await retriever.close?.();
      }
    }
    watch.progress('the LanceDB table write and full-text index build');
    const retriever = await lancedbKeywordRetriever({ onProgress: () => watch.progress() })(factoryContext(ctx, st, {}));
    try {
      const buildSeconds = (performance.now() - t0) / 1000;
      watch.progress('LanceDB full-text searches');
      const { lists, queryMs } = await collectLists('keyword-lance-fts', retriever, ctx.questionsIn, depth, {
        resolveId: resolverOf(ctx, st),
        signal: ctx.signal,
        onProgress: () => watch.progress(),
      });
      return computed({ lists, buildSeconds, queryMs, info: { describe: retriever.describe?.() ?? {} } });
    } finally {
      await retriever.close?.();
    }
  },
  failed: (unit, error) =>
    isFts(unit.params)
      ? { error: `LanceDB full-text index on ${ckOf(unit.id)} failed: ${error}`, warn: true }
      : { error: `keyword index on ${ckOf(unit.id)} failed: ${error}` },
  /** Scheduling cost: its chunking's chunks (documents before the chunking has finished) at 10,000 chunks/s. */
  cost: (unit, ctx) => chunkCountOf(unit, ctx) / 10_000,
  estimate: (_unit, est) => ({ seconds: (est.documents + est.questions) / 5_000, basis: 'default 5,000 texts/s' }),
};
