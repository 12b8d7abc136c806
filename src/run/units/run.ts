/**
 * Unit kind `run` (`none.<name>`): an imported TREC run (`runs:`), read and checked before the plan
 * (src/run/inputs.ts `loadRuns`), turned into one list per scored question (ids mapped to the whole-document chunking;
 * with `labels: keep` unknown ids stay at the document level). Input: `chunking:none`. Value: a `RankingValue` at its
 * full length. Never checkpointed: the run file is the stored form.
 */
import { listRetriever } from '../../retrieve/builtin.js';
import { collectLists } from '../retrieve.js';
import { chunkingOf, computed, resolverOf } from './ranking.js';
import type { UnitKindHandler } from './types.js';

export const runUnit: UnitKindHandler = {
  kind: 'run',
  waitingFor: 'its lists',
  lane: () => 'external',
  key: async () => null,
  async run(unit, inputs, ctx) {
    const st = chunkingOf(unit, inputs);
    const run = ctx.runs.get(unit.params.name as string)!;
    const { lists } = await collectLists(run.name, listRetriever(run.lists), ctx.questionsIn, Number.MAX_SAFE_INTEGER, {
      resolveId: resolverOf(ctx, st, ctx.config.dataset.labels === 'keep'),
      signal: ctx.signal,
    });
    return computed({ lists, buildSeconds: 0, queryMs: 0 });
  },
  estimate: () => ({ seconds: 0, basis: 'read from the run file' }),
};
