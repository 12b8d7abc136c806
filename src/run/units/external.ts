/**
 * Unit kind `external` (`<ck>.<name>`): a `retrievers:` module (or a retriever object passed to `runSweep`) on its
 * chunking: the factory is called once (within the entry's `timeoutMs`), then `search(question, depth)` once per scored
 * question (the entry's `concurrency` in flight, each within `timeoutMs`; ids validated, ties ordered by the harness,
 * src/run/retrieve.ts). Input: its chunking. Value: a `RankingValue` at the plan's row depth, checkpointed under the
 * plan's key with the module file's SHA-256 filled in (an object: its own `checkpointKey`, or never). A failure fails
 * the retriever's rows and is warned.
 */
import { performance } from 'node:perf_hooks';
import { resolveKey, type PlanUnit } from '../../plan/graph.js';
import { HarnessError, isHarnessError } from '../../errors.js';
import type { Retriever } from '../../retrieve/retriever.js';
import { collectLists, factoryWithTimeout } from '../retrieve.js';
import { fileHash } from '../checkpoint.js';
import { noteProgress } from '../stall.js';
import { describeShort, errorText } from '../inputs.js';
import { chunkingOf, computed, factoryContext, planDepthCheckpoint, resolverOf } from './ranking.js';
import { progressFromZero, type UnitContext, type UnitKindHandler } from './types.js';

const entryOf = (unit: PlanUnit, ctx: UnitContext) => ctx.config.retrievers.find((r) => r.name === unit.params.name)!;

export const externalUnit: UnitKindHandler = {
  kind: 'external',
  waitingFor: 'its index build and first results',
  lane: () => 'external',
  key: async (unit) => (unit.deferred.includes('module') ? resolveKey(unit, { module: fileHash(unit.params.module as string) }) : unit.key),
  ...planDepthCheckpoint,
  async run(unit, inputs, ctx) {
    const st = chunkingOf(unit, inputs);
    const entry = entryOf(unit, ctx);
    ctx.emit({ kind: 'stage', stage: `retriever ${entry.name}`, detail: `${st.chunks.length} chunks of ${st.key}` });
    const t0 = performance.now();
    let retriever: Retriever;
    try {
      retriever = await factoryWithTimeout(entry.name, Promise.resolve(ctx.factories.get(entry.name)!(factoryContext(ctx, st, entry.options))), entry.timeoutMs);
    } catch (e) {
      if (isHarnessError(e, 'RETRIEVER_FAILED')) throw e;
      throw new HarnessError('RETRIEVER_FAILED', `retriever ${entry.name}: its factory threw: ${errorText(e)}`, { cause: e });
    }
    if (!retriever || typeof retriever.search !== 'function')
      throw new HarnessError('RETRIEVER_FAILED', `retriever ${entry.name}: the factory returned ${describeShort(retriever)}, not an object with search(question, depth)`);
    try {
      const buildSeconds = (performance.now() - t0) / 1000;
      noteProgress(`answers to its searches (${ctx.questionsIn.length} questions)`);
      const { lists, queryMs } = await collectLists(entry.name, retriever, ctx.questionsIn, unit.depth!, {
        resolveId: resolverOf(ctx, st),
        timeoutMs: entry.timeoutMs,
        concurrency: entry.concurrency,
        signal: ctx.signal,
        onProgress: progressFromZero((e) => ctx.emit(e), `retriever ${entry.name}`),
      });
      return computed({ lists, buildSeconds, queryMs, info: retriever.describe?.() ?? {} });
    } finally {
      try {
        await retriever.close?.();
      } catch {
        /* a failing close does not change the lists */
      }
    }
  },
  failed: (_unit, error) => ({ error, warn: true }),
  estimate: () => ({ seconds: null, basis: "a module's speed is not known before it runs" }),
};

/** The manifest entry of an external unit that ran (or failed on its own). */
export function externalInfo(unit: PlanUnit, ctx: UnitContext): Record<string, unknown> {
  const entry = entryOf(unit, ctx);
  const r = ctx.result(unit.id)!;
  const object = ctx.objectRetrievers.has(entry.name);
  return {
    name: entry.name,
    module: entry.module,
    ...(object ? {} : { moduleSha256: fileHash(entry.module) }),
    chunking: unit.inputs[0].slice('chunking:'.length),
    ...('error' in r ? { error: r.error } : { fromCheckpoint: (r.value as { fromCheckpoint: boolean }).fromCheckpoint, describe: (r.value as { info?: object }).info ?? {} }),
  };
}
