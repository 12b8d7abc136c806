/**
 * A whole sweep through the `openai:` provider against the in-test server: with every fault injected the matrix is
 * identical to the fault-free run, the manifest shows the retries, and the API key is in no written file; a server that
 * answers 401 fails only that model's rows, with the URL, the model and the status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { writeArtifacts } from '../../src/run/artifacts.js';
import { analyze, withStatistics } from '../../src/report/analyze.js';
import { renderReports } from '../../src/report/render.js';
import type { SweepResult } from '../../src/types.js';
import { startFakeServer, type FakeServer, type Fault } from '../helpers/fake-server.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');
const KEY_ENV = 'RS_TEST_FAKE_EMBED_KEY';
const KEY = 'sk-proj-test-0a1b2c3d4e5f6a7b8c9d';

/** Every regular file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

/** Files (under the given folders) whose bytes contain `needle`. */
function filesContaining(dirs: string[], needle: string): string[] {
  return dirs.flatMap(filesUnder).filter((f) => readFileSync(f).includes(Buffer.from(needle, 'utf8')));
}

/** Runs the tiny sweep with one openai: model at `url`, writes the artifacts; returns result and folders. */
async function sweep(url: string, extra: Record<string, unknown> = {}, cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-srv-cache-')), 'c')) {
  const config = parseConfig({
    name: 'tiny-server',
    dataset: { path: tiny },
    chunking: { sizes: ['none', 16], overlap: 4 },
    topK: [1, 3, 5],
    modes: ['keyword', 'semantic', 'hybrid'],
    primaryMetric: 'ndcg@3',
    cacheDir,
    statistics: { seed: 7, resamples: 1000, alpha: 0.05 },
    embeddings: [
      { model: 'openai:fake-embed', baseUrl: `${url}/v1`, apiKeyEnv: KEY_ENV, batchSize: 4, concurrency: 2, timeoutMs: 300, ...extra },
    ],
  });
  const { result: raw } = await runSweep(config, { now: () => new Date('2026-01-01T00:00:00Z') });
  const analysis = analyze(raw, { seed: 7, resamples: 1000 });
  const result = withStatistics(raw, analysis);
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-srv-out-')), 'results');
  writeArtifacts(dir, result, renderReports(result, analysis) as unknown as Record<string, string>);
  return { result, dir, cacheDir };
}

/** What must not change between runs: per configuration, status, means, and every ranked list. */
function matrixOf(r: SweepResult) {
  return r.configs.map((c) => ({
    id: c.config.id,
    status: c.status,
    means: c.means,
    ranked: c.perQuery.map((q) => q.retrieved.map((x) => [x.chunkId, x.score])),
  }));
}

function embeddingEntry(r: SweepResult): Record<string, unknown> {
  return (r.manifest.embeddings as Record<string, unknown>[])[0];
}

describe('a sweep through the openai: provider with every fault injected', () => {
  let clean: FakeServer;
  let faulty: FakeServer;
  let cleanRun: Awaited<ReturnType<typeof sweep>>;
  let faultyRun: Awaited<ReturnType<typeof sweep>>;
  const FAULTS: Fault[] = [
    { kind: 'status', status: 429, retryAfter: '1' },
    { kind: 'status', status: 500 },
    { kind: 'slow', ms: 2_000 },
    { kind: 'reset' },
    { kind: 'wrong-count' },
    { kind: 'shuffle' },
  ];

  beforeAll(async () => {
    process.env[KEY_ENV] = KEY;
    clean = await startFakeServer({ apiKey: KEY, dimensions: 48 });
    faulty = await startFakeServer({ apiKey: KEY, dimensions: 48, faults: FAULTS });
    cleanRun = await sweep(clean.url);
    faultyRun = await sweep(faulty.url);
  });
  afterAll(async () => {
    delete process.env[KEY_ENV];
    await clean?.close();
    await faulty?.close();
  });

  it('every fault was served, and the clean server saw none', () => {
    expect(faulty.requests.filter((r) => r.fault !== undefined).map((r) => r.fault)).toEqual(FAULTS.map((f) => f.kind));
    expect(clean.requests.every((r) => r.fault === undefined)).toBe(true);
  });

  it('all 18 rows are ok and the faulty run equals the clean run in every metric and every ranking', () => {
    expect(faultyRun.result.configs).toHaveLength(2 * 3 * 3);
    expect(faultyRun.result.configs.every((c) => c.status === 'ok')).toBe(true);
    expect(matrixOf(faultyRun.result)).toEqual(matrixOf(cleanRun.result));
  });

  it('semantic retrieval over the fake vectors is meaningful: "LMP-204 seal kit" finds the LMP-204 manual first', () => {
    const sem = cleanRun.result.configs.find((c) => c.config.mode === 'semantic' && c.config.k === 1 && c.config.id.startsWith('none.'))!;
    expect(sem.perQuery.find((q) => q.qid === 'q2')!.retrieved[0].docId).toBe('products/lmp-204.md');
  });

  it('the manifest shows the requests, the five retries (shuffle is valid, not retried), their wait and the tokens', () => {
    const s = embeddingEntry(faultyRun.result).server as Record<string, number>;
    const c = embeddingEntry(cleanRun.result).server as Record<string, number>;
    expect(s.retries).toBe(5);
    expect(c.retries).toBe(0);
    expect(s.requests).toBe(c.requests + 5);
    expect(s.retryWaitSeconds).toBeGreaterThanOrEqual(1); // Retry-After: 1 was honoured
    expect(s.promptTokens).toBe(c.promptTokens);
    expect(c.promptTokens).toBeGreaterThan(0);
  });

  it('report.md shows the tokens, requests and retries per model beside its inference time', () => {
    const s = embeddingEntry(faultyRun.result).server as Record<string, number>;
    const md = readFileSync(path.join(faultyRun.dir, 'report.md'), 'utf8');
    expect(md).toContain(`${s.promptTokens} tokens in ${s.requests} requests, 5 retries (${s.retryWaitSeconds.toFixed(1)} s waiting)`);
    expect(md).toMatch(/inference \d+\.\d s for \d+ texts embedded/);
  });

  it('the API key appears in no written file (results and cache), though every request carried it', () => {
    expect(faulty.requests.every((r) => r.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(filesContaining([faultyRun.dir, faultyRun.cacheDir, cleanRun.dir, cleanRun.cacheDir], KEY)).toEqual([]);
    // the variable's NAME is recorded, so the run can be reproduced
    expect(readFileSync(path.join(faultyRun.dir, 'manifest.json'), 'utf8')).toContain(KEY_ENV);
  });
});

describe('a sweep against a server that answers 401', () => {
  let srv: FakeServer;
  beforeAll(async () => {
    process.env[KEY_ENV] = KEY;
    srv = await startFakeServer({ apiKey: 'sk-a-different-key' });
  });
  afterAll(async () => {
    delete process.env[KEY_ENV];
    await srv?.close();
  });

  it('fails that model\'s rows with the URL, the model and 401 after one probe; keyword rows run; no key written', async () => {
    const { result, dir, cacheDir } = await sweep(srv.url);
    const failed = result.configs.filter((c) => c.status === 'failed');
    const ok = result.configs.filter((c) => c.status === 'ok');
    expect(ok.every((c) => c.config.mode === 'keyword')).toBe(true);
    expect(ok).toHaveLength(6);
    expect(failed).toHaveLength(12);
    expect(failed[0].error).toContain(`${srv.url}/v1/embeddings`);
    expect(failed[0].error).toContain('openai:fake-embed');
    expect(failed[0].error).toContain('401');
    expect(srv.requests).toHaveLength(1); // the probe, not retried; nothing embedded
    expect(filesContaining([dir, cacheDir], KEY)).toEqual([]);
  });
});

describe('a warm rerun against an embedding server', () => {
  it('sends no request at all when dimensions is set (no create-time probe; every ranking from its checkpoint)', async () => {
    process.env[KEY_ENV] = KEY;
    const server = await startFakeServer({ apiKey: KEY, dimensions: 48 });
    try {
      const cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-srv-warm-')), 'c');
      const first = await sweep(server.url, { dimensions: 48 }, cacheDir);
      const sent = server.requests.length;
      expect(sent).toBeGreaterThan(0);
      const second = await sweep(server.url, { dimensions: 48 }, cacheDir);
      expect(server.requests.length).toBe(sent);
      expect(matrixOf(second.result)).toEqual(matrixOf(first.result));
    } finally {
      delete process.env[KEY_ENV];
      await server.close();
    }
  });
});
