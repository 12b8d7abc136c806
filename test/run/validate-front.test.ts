/**
 * `validate` is the run's own front half (issue 24 §4, issue 23): both go through `prepareSweep` (src/run/front.ts)
 * and the same plan, so they list the same units, read the dataset with the same options (`dataset.sample`,
 * `dataset.strictness: warn`), and refuse the same configs with the same messages (a config that yields no
 * configuration; a cacheDir that is a file, refused before any work).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { appendFileSync, cpSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig, type SweepConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { formatPlan, planSweep } from '../../src/run/plan.js';
import { isHarnessError } from '../../src/errors.js';
import { buildTinyCrossEncoder } from '../../scripts/build-tiny-model.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tiny = path.join(repo, 'test/fixtures/sweep/tiny');
/** SciFact from ../shared (skipped when absent; never copied into the repository). */
const scifact = path.resolve(repo, '../shared/datasets/scifact');

/** The formatted HarnessError `f` throws (fails the test when it throws something else or nothing). */
async function refusal(f: () => Promise<unknown>): Promise<{ code: string; text: string }> {
  try {
    await f();
  } catch (e) {
    if (isHarnessError(e)) return { code: e.code, text: e.format() };
    throw e;
  }
  throw new Error('expected a HarnessError, got none');
}

describe('validate and run share the front half and the plan', () => {
  let work: string;
  const base = (extra: Record<string, unknown>): SweepConfig =>
    parseConfig({ name: 'front', dataset: { path: tiny }, chunking: { sizes: ['none', 16], overlap: 4 }, topK: [1, 3], modes: ['keyword'], primaryMetric: 'ndcg@3', cacheDir: path.join(work, 'cache'), ...extra });
  beforeAll(() => {
    work = mkdtempSync(path.join(tmpdir(), 'rs-front-'));
  });

  it('list the same units: keyword, a module retriever, an imported run and a rerank of each', async () => {
    const ce = (await buildTinyCrossEncoder(path.join(work, 'tiny-ce'))).dir;
    const runFile = path.join(work, 'r.trec');
    writeFileSync(runFile, 'q1 Q0 billing/refunds.md 1 2 t\nq2 Q0 products/lmp-204.md 1 2 t\n');
    const config = base({
      retrievers: [{ name: 'words', module: path.join(repo, 'examples/retrievers/words.mjs') }],
      runs: [{ name: 'r', path: runFile }],
      rerank: ['none', { model: `transformers:${ce}`, label: 'ce', depth: 2 }],
    });
    const plan = await planSweep(config);
    const { units, result } = await runSweep(config, { resume: false });
    // 2 chunkings, 2 keyword, words, r, 4 rerank (one per ranking), scoring.
    expect(plan.graph.units.length).toBe(2 + 2 + 1 + 1 + 4 + 1);
    expect([...units]).toEqual(plan.graph.units.map((u) => u.id));
    expect(result.configs.map((c) => c.config.id)).toEqual(plan.graph.rows.map((r) => r.spec.id));
    // Every unit has a cost line from its kind: seconds or null, and where the figure comes from.
    expect(plan.unitEstimates.map((u) => u.id)).toEqual(units);
    for (const u of plan.unitEstimates) expect(u.basis.length).toBeGreaterThan(0);
    // Planned memory: configurations × scored questions × 4 KB.
    expect(plan.plannedMemoryBytes).toBe(plan.configurations * plan.scored * 4096);
    expect(formatPlan(plan)).toContain(`planned: ${plan.configurations} configurations, memory about`);
  }, 60_000);

  it.skipIf(!existsSync(scifact))('dataset.sample: validate plans the documents the run uses (SciFact, 600 of 5,183)', async () => {
    const config = parseConfig({ name: 'sample', dataset: { path: scifact, split: 'test', sample: { documents: 600, seed: 3 } }, chunking: { sizes: ['none'] }, topK: [1], modes: ['keyword'], primaryMetric: 'ndcg@1', cacheDir: path.join(work, 'cache') });
    const plan = await planSweep(config);
    const { result } = await runSweep(config, { resume: false });
    const docs = (result.manifest.dataset as { docs: number }).docs;
    expect(plan.documents).toBe(docs);
    expect(plan.documents).toBe(600);
    expect(plan.chunkings[0].chunks).toBe((result.manifest.chunking as { chunkings: { chunks: number }[] }).chunkings[0].chunks);
  }, 60_000);

  it('dataset.strictness: warn: validate accepts an unknown question key and warns as the run does; strict: both refuse it with one message', async () => {
    const ds = path.join(work, 'extra-key');
    cpSync(tiny, ds, { recursive: true });
    appendFileSync(path.join(ds, 'questions.jsonl'), '{"id": "q9", "question": "refund card", "relevant": ["billing/refunds.md"], "colour": "red"}\n');
    const warnConfig = base({ dataset: { path: ds, strictness: 'warn' } });
    const plan = await planSweep(warnConfig);
    const { result } = await runSweep(warnConfig, { resume: false });
    const warned = (ws: readonly string[]) => ws.filter((w) => w.includes('colour'));
    expect(warned(plan.warnings).length).toBe(1);
    expect(warned(plan.warnings)).toEqual(warned(result.warnings ?? []));
    expect(plan.scored).toBe(result.questions.length);
    const strict = base({ dataset: { path: ds } });
    const a = await refusal(() => planSweep(strict));
    const b = await refusal(() => runSweep(strict));
    expect(a.code).toBe('QUESTIONS_INVALID');
    expect(a).toEqual(b);
  }, 60_000);

  it('a config that yields 0 configurations is refused by both, with the same message', async () => {
    const config = base({ modes: ['semantic'], embeddings: [] });
    const a = await refusal(() => planSweep(config));
    const b = await refusal(() => runSweep(config));
    expect(a.code).toBe('CONFIG_INVALID');
    expect(a.text).toContain('embeddings');
    expect(a).toEqual(b);
  });

  it('a cacheDir that is a file (or lies under one) is refused by validate before any work, with the run\'s message', async () => {
    const file = path.join(work, 'not-a-folder');
    writeFileSync(file, 'x');
    for (const cacheDir of [file, path.join(file, 'sub')]) {
      // The dataset does not exist: the cacheDir check comes first, so nothing is read.
      const config = { ...base({}), cacheDir, dataset: { ...base({}).dataset, path: path.join(work, 'no-such-dataset') } } as SweepConfig;
      const a = await refusal(() => planSweep(config));
      const b = await refusal(() => runSweep(config));
      expect(a.code).toBe('CONFIG_INVALID');
      expect(a.text).toContain(`cacheDir ${cacheDir} is not a folder: ${file} is a file`);
      expect(a).toEqual(b);
    }
  });
});
