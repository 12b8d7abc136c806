/**
 * The corpus embedding runs outside any one unit (the embedding unit hands out `ensureEmbedded()`, the dense units
 * await it), so its batches must reach the stall clock of every dense unit waiting for it: at 1M documents a corpus
 * embedding longer than `limits.stallSeconds` failed every semantic and hybrid row as stalled (session 8's 1M bench).
 * Here the in-test server answers each document batch after 120 ms, one text a batch, so embedding the tiny corpus's
 * chunk texts takes well over the 0.4 s limit while no gap between batches comes near it.
 */
import { mkdtempSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { startFakeServer, type FakeServer } from '../helpers/fake-server.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');
const KEY_ENV = 'RS_TEST_EMBED_STALL_KEY';
const questions = new Set(
  readFileSync(path.join(tiny, 'questions.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => (JSON.parse(l) as { question: string }).question),
);

describe('a corpus embedding longer than limits.stallSeconds, with steady batches', () => {
  let server: FakeServer;
  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-test';
    // Only document batches are slow: the questions' batches (no progress events) answer at once.
    server = await startFakeServer({
      faultFilter: (p, body) => p.endsWith('/embeddings') && Array.isArray(body.input) && !(body.input as string[]).some((t) => questions.has(t)),
    });
  });
  afterAll(async () => {
    delete process.env[KEY_ENV];
    await server.close();
  });

  it('keeps every dense unit alive: no semantic or hybrid row fails as stalled', async () => {
    server.faults.push(...Array.from({ length: 200 }, () => ({ kind: 'slow' as const, ms: 120 })));
    const config = parseConfig({
      dataset: { path: tiny },
      chunking: { sizes: ['none', 16], overlap: 4 },
      topK: [1, 3],
      modes: ['semantic', 'hybrid'],
      primaryMetric: 'ndcg@3',
      cacheDir: path.join(mkdtempSync(path.join(tmpdir(), 'rs-embed-stall-')), 'c'),
      embeddings: [{ model: 'openai:fake-embed', baseUrl: `${server.url}/v1`, apiKeyEnv: KEY_ENV, dimensions: 16, batchSize: 1, concurrency: 1, timeoutMs: 5000 }],
      limits: { stallSeconds: 0.4 },
    });
    const { result } = await runSweep(config);
    const slowBatches = 200 - server.faults.length;
    // The embedding really outlasted the limit: at least 0.4 s / 0.12 s = 3.33 slow batches, so 4 or more.
    expect(slowBatches).toBeGreaterThanOrEqual(Math.ceil(0.4 / 0.12));
    const failed = result.configs.filter((c) => c.status !== 'ok').map((c) => `${c.config.id}: ${c.error ?? ''}`);
    expect(failed).toEqual([]);
    // none and 16 chunkings × semantic and hybrid × k 1 and 3.
    expect(result.configs).toHaveLength(2 * 2 * 2);
  }, 60_000);
});
