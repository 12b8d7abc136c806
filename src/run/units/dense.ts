/**
 * Unit kind `dense` (`<ck>.semantic.<label>`: exact in-memory search; `<ck>.<lancedb engine>.<label>`: a LanceDB
 * vector table, flat or ivf_pq): one model's vectors of one chunking searched for every scored question. Inputs: the
 * model's embedding unit, the chunking, and for an ivf_pq unit the exact lists of the same model and chunking (memory,
 * else flat; optional: without them the unit still runs, and its rows get no `ann_recall@k`, with a warning). Value: a
 * `RankingValue`, checkpointed under the plan's key with the model's cache keys filled in (deferred `documentKey`,
 * `queryKey`). Build seconds include the chunking's share of the model's embedding time; query ms the latency probe's.
 */
import { performance } from 'node:perf_hooks';
import { resolveKey, type PlanUnit } from '../../plan/graph.js';
import { semanticRetriever } from '../../retrieve/builtin.js';
import { lancedbRetriever } from '../../retrieve/lancedb.js';
import { VectorFile } from '../../retrieve/vector-file.js';
import { collectLists } from '../retrieve.js';
import { LANCE_STALL_REMEDY } from './keyword.js';
import type { EmbeddingHandle } from './embedding.js';
import { chunkingOf, computed, factoryContext, planDepthCheckpoint, resolverOf } from './ranking.js';
import { chunkCountOf, errorOf, rankingOf, type UnitInputs, type UnitKindHandler, type UnitResult } from './types.js';

const isLance = (unit: PlanUnit) => unit.params.engine === 'lancedb';
/** The embedding handle a dense unit reads (its `embedding:*` input; the executor ran it first). */
export function embeddingOf(unit: PlanUnit, inputs: UnitInputs): EmbeddingHandle {
  const id = unit.inputs.find((i) => i.startsWith('embedding:'))!;
  return (inputs.get(id) as { value: EmbeddingHandle }).value;
}
/** The unit's chunking key, engine name (`semantic`, a LanceDB engine's name) and model label. */
function partsOf(unit: PlanUnit): { ck: string; name: string; label: string } {
  const ck = unit.inputs.find((i) => i.startsWith('chunking:'))!.slice('chunking:'.length);
  const label = unit.params.model as string;
  return { ck, label, name: unit.id.slice(ck.length + 1, unit.id.length - label.length - 1) };
}
const exactInput = (unit: PlanUnit) => unit.inputs.find((i) => !i.startsWith('embedding:') && !i.startsWith('chunking:'));

export const denseUnit: UnitKindHandler = {
  kind: 'dense',
  waitingFor: 'its index build and first results',
  lane: (unit) => `model:${unit.params.model as string}`,
  remedy: (unit) => (isLance(unit) ? LANCE_STALL_REMEDY : undefined),
  optionalInputs: (unit) => {
    const exact = exactInput(unit);
    return exact ? [exact] : [];
  },
  key: async (unit, inputs) => resolveKey(unit, embeddingOf(unit, inputs).modelKey),
  ...planDepthCheckpoint,
  async run(unit, inputs, ctx, watch) {
    const st = chunkingOf(unit, inputs);
    const handle = embeddingOf(unit, inputs);
    const label = handle.spec.label;
    // The corpus embedding's batches are this unit's progress too (it waits for them).
    const e = await handle.ensureEmbedded(() => watch.progress());
    const t1 = performance.now();
    if (!isLance(unit)) {
      const retriever = await semanticRetriever({
        embed: async (texts) => texts.map((text) => e.queries.get(text)!),
        embedMatrix: async () => e.matrices.get(st.key)!,
        shardBytes: e.shardBytes,
      })(factoryContext(ctx, st, {}));
      const buildSeconds = (performance.now() - t1) / 1000 + (e.docSeconds.get(st.key) ?? 0);
      try {
        const { lists, queryMs } = await collectLists(`semantic ${label}`, retriever, ctx.questionsIn, unit.depth!, { resolveId: resolverOf(ctx, st), signal: ctx.signal });
        return computed({ lists, buildSeconds, queryMs: queryMs + e.probeMs });
      } finally {
        await retriever.close?.();
      }
    }
    const matrix = e.matrices.get(st.key)!;
    watch.progress('the LanceDB vector table write and index build');
    // Document vectors come from the chunking's matrix (already normalised) by row, chunk i being row i: no chunk text
    // is read for them (issue 25 item 1); queries from the query map.
    const rowAt = (i: number): Float32Array => {
      // a view into a resident matrix; a copy read from a vector file; the first d floats either way
      if (!(matrix instanceof VectorFile)) return matrix.row(i).subarray(0, matrix.d);
      const row = new Float32Array(matrix.dp);
      matrix.readRow(i, row);
      return row.subarray(0, matrix.d);
    };
    const retriever = await lancedbRetriever({
      documentRows: (start, end) => Array.from({ length: end - start }, (_, j) => rowAt(start + j)),
      embed: async (texts, role) => {
        if (role === 'document') throw new Error('the sweep gives LanceDB its document vectors by row (documentRows)');
        return texts.map((text) => e.queries.get(text)!);
      },
      modelKey: handle.provider.cacheKey('document'),
      index: unit.params.index as Parameters<typeof lancedbRetriever>[0]['index'],
      onProgress: () => watch.progress(),
    })(factoryContext(ctx, st, {}));
    const buildSeconds = (performance.now() - t1) / 1000 + (e.docSeconds.get(st.key) ?? 0);
    try {
      const { name } = partsOf(unit);
      const { lists, queryMs } = await collectLists(`${name} ${label}`, retriever, ctx.questionsIn, unit.depth!, { resolveId: resolverOf(ctx, st), signal: ctx.signal });
      return computed({ lists, buildSeconds, queryMs: queryMs + e.probeMs, info: { describe: retriever.describe?.() ?? {} } });
    } finally {
      await retriever.close?.();
    }
  },
  failed: (unit, error) => {
    const { ck, name, label } = partsOf(unit);
    return isLance(unit) ? { error: `${name} on ${ck} with ${label} failed: ${error}`, warn: true } : { error: `semantic index on ${ck} with ${label} failed: ${error}` };
  },
  /** Scheduling cost: an exact search of every scored question over its chunking's chunks, at 2·10⁷ chunk-questions/s. */
  cost: (unit, ctx) => (chunkCountOf(unit, ctx) * ctx.scored.length) / 2e7,
  estimate: () => ({ seconds: null, basis: 'the embedding unit holds the model time; the search is not estimated' }),
};

/**
 * The exact lists an ivf_pq unit is measured against (issue 12 §6), or undefined (with a warning) when they failed or
 * were not computed. Called by the scoring unit for each approximate unit that succeeded.
 */
export function exactListsOf(unit: PlanUnit, result: (id: string) => UnitResult | undefined, warn: (m: string) => void): ReturnType<typeof rankingOf> {
  const id = exactInput(unit);
  const exact = id === undefined ? undefined : result(id);
  const r = rankingOf(exact);
  if (!r) warn(`${unit.id}: no exact lists to measure ann_recall against (${errorOf(exact) ?? 'none computed'})`);
  return r;
}
