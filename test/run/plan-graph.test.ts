/**
 * One plan (issue 23): `validate`'s plan and `run` list the same units, the matrix's rows are the plan's rows, and
 * every checkpoint key the plan knows before the run is a key the run wrote (existing caches stay valid).
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { planSweep } from '../../src/run/plan.js';
import { unitsFor } from '../../src/plan/graph.js';
import type { EmbeddingProvider } from '../../src/embed/provider.js';

const tiny = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sweep/tiny');

/** 26 letter counts: a model-free embedding. */
const letters: EmbeddingProvider = {
  name: 'letters',
  label: 'letters',
  dimensions: 26,
  cacheKey: (role) => `letters-v1/${role}`,
  async embedBatch(texts) {
    return texts.map((t) => {
      const v = new Float32Array(26);
      for (const ch of t.toLowerCase()) if (ch >= 'a' && ch <= 'z') v[ch.charCodeAt(0) - 97] += 1;
      return v;
    });
  },
  truncatedCount: () => 0,
  describe: () => ({ model: 'letters' }),
  close: async () => {},
};

describe('planGraph: validate and run share one plan', () => {
  it('the same units, the same rows, and the plan\'s known keys are the checkpoints the run wrote', async () => {
    const cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-plan-')), 'c');
    const config = parseConfig({
      name: 'tiny',
      dataset: { path: tiny },
      chunking: { sizes: ['none', 16], overlap: 4 },
      topK: [1, 3],
      modes: ['keyword', 'semantic', 'hybrid'],
      primaryMetric: 'ndcg@3',
      cacheDir,
    });
    const { result, units } = await runSweep(config, { providers: [letters] });
    // validate sees the provider as the sweep does: one more embeddings entry under its label.
    const spec = { model: 'letters', label: 'letters', dtype: 'fp32', pooling: 'mean', normalize: true, queryPrefix: '', documentPrefix: '', allowRemote: false, batchSize: 32, maxLength: null, workers: null };
    const plan = await planSweep({ ...config, embeddings: [...config.embeddings, spec] } as typeof config);
    const graph = plan.graph;

    // 2 chunkings × (1 keyword + 1 semantic + 1 hybrid) rankings, 1 embedding, 1 scoring.
    expect(graph.units.length).toBe(2 + 2 * 3 + 1 + 1);
    expect([...units].sort()).toEqual(graph.units.map((u) => u.id).sort());
    expect(result.configs.map((c) => c.config.id)).toEqual(graph.rows.map((r) => r.spec.id));
    expect(result.configs.length).toBe(2 * 3 * 2); // chunkings × rankings × k

    // Every unit's inputs come before it (dependency order); a hybrid row needs its chunking, both lists and the model.
    const seen = new Set<string>();
    for (const u of graph.units) {
      for (const i of u.inputs) expect(seen.has(i)).toBe(true);
      seen.add(u.id);
    }
    // The model's embedding unit embeds the texts of every chunking it serves at once (each distinct text once).
    expect(graph.rows.find((r) => r.spec.id === 'cs16-ov4.hybrid.letters.k3')!.needs).toEqual([
      'chunking:none',
      'chunking:cs16-ov4',
      'cs16-ov4.keyword',
      'embedding:letters',
      'cs16-ov4.semantic.letters',
      'cs16-ov4.hybrid.letters',
      'scoring',
    ]);
    // Rows of the keyword engine need no model.
    expect(unitsFor(graph, (r) => r.spec.mode === 'keyword').map((u) => u.id)).toEqual(['chunking:none', 'chunking:cs16-ov4', 'none.keyword', 'cs16-ov4.keyword', 'scoring']);

    // Keys known before the run (chunkings and keyword units: 4) are the files the run wrote.
    const known = graph.units.filter((u) => u.key !== null);
    expect(known.map((u) => u.kind).sort()).toEqual(['chunking', 'chunking', 'keyword', 'keyword']);
    for (const u of known) expect(existsSync(path.join(cacheDir, 'checkpoints', `${u.key}.${u.kind === 'chunking' ? 'chunks' : 'json'}`))).toBe(true);
    // validate counts them as checkpointed (it runs after the sweep here).
    expect([...plan.cachedUnits].sort()).toEqual(known.map((u) => u.id).sort());
    // Plain data: the graph survives JSON unchanged.
    expect(JSON.parse(JSON.stringify(graph))).toEqual(graph);

    // run --only '*.keyword.*': the keyword rows, only the units they need, the same values as the full run, marked partial.
    const partial = await runSweep(config, { providers: [letters], only: '*.keyword.*' });
    const keywordRows = graph.rows.filter((r) => r.spec.retriever === 'keyword');
    expect(partial.result.configs.map((c) => c.config.id)).toEqual(keywordRows.map((r) => r.spec.id));
    expect([...partial.units].sort()).toEqual(['chunking:cs16-ov4', 'chunking:none', 'cs16-ov4.keyword', 'none.keyword', 'scoring']);
    for (const row of partial.result.configs)
      expect(row.means).toEqual(result.configs.find((c) => c.config.id === row.config.id)!.means);
    const mark = partial.result.manifest.partial as { rows: number; of: number; leftOut: string[] };
    expect([mark.rows, mark.of, mark.leftOut.length]).toEqual([2 * 2, 2 * 3 * 2, 2 * 2 * 2]);
    expect((partial.result.warnings ?? []).some((w) => w.startsWith("partial run (--only *.keyword.*): 4 of 12 rows; left out: none.semantic.letters.k1"))).toBe(true);
    // A unit kind selects the rows whose ranking unit is of that kind.
    const fused = await runSweep(config, { providers: [letters], only: 'fusion' });
    expect(fused.result.configs.map((c) => c.config.retriever)).toEqual(['hybrid', 'hybrid', 'hybrid', 'hybrid']);
    await expect(runSweep(config, { providers: [letters], only: '*.bm42.*' })).rejects.toMatchObject({ code: 'USAGE' });
  }, 120_000);
});
