import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddingCache } from '../../src/embed/cache.js';
import { embedTexts } from '../../src/embed/embed-texts.js';
import { OpenAIProvider, parseEmbeddingResponse, PROBE_TEXT, type OpenAIProviderOptions } from '../../src/embed/openai.js';
import { createProvider } from '../../src/embed/registry.js';
import { BGE_QUERY_INSTRUCTION, embedCallSize, resolveEmbeddingSpec } from '../../src/embed/spec.js';
import { parseConfig } from '../../src/config/schema.js';
import { InvalidResponse, type HttpClock } from '../../src/net/http.js';
import { fakeEmbedding, startFakeServer, type FakeServer, type Fault } from '../helpers/fake-server.js';
import { rejection, thrown } from '../helpers/errors.js';

/** Sleeps cost no time; jitter fixed. */
const instant: HttpClock = { now: () => Date.now(), sleep: async () => {} };
const quick: OpenAIProviderOptions = { clock: instant, random: () => 0.5 };

let server: FakeServer | undefined;
const started: FakeServer[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) await s.close();
  server = undefined;
});

/** The L2-normalised fake vector of a model input. */
function expected(input: string, d: number): number[] {
  const v = fakeEmbedding(input, d);
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return v.map((x) => (n > 0 ? x / n : 0));
}

function expectVector(got: Float32Array, want: number[]): void {
  expect(got.length).toBe(want.length);
  for (let j = 0; j < want.length; j++) expect(got[j]).toBeCloseTo(want[j], 6);
}

async function provider(entry: Record<string, unknown>, faults: Fault[] = [], opts: OpenAIProviderOptions = quick, apiKey?: string) {
  server = await startFakeServer({ faults, dimensions: 32, ...(apiKey !== undefined ? { apiKey } : {}) });
  started.push(server);
  const spec = resolveEmbeddingSpec({ model: 'openai:fake-embed', baseUrl: `${server.url}/v1`, ...entry });
  const p = (await createProvider(spec, { cacheDir: tmpdir(), server: opts })) as OpenAIProvider;
  return { p, srv: server, spec };
}

const TEXTS = ['the cat sat on the mat', 'dogs chase cats', 'a quick brown fox', 'stock markets fell', 'cats and dogs'];

describe('openai: entries in the config', () => {
  it('needs baseUrl; fills server defaults; label oa-<model>', () => {
    const s = resolveEmbeddingSpec({ model: 'openai:nomic-embed-text:v1.5', baseUrl: 'http://127.0.0.1:11434/v1/' });
    expect(s.label).toBe('oa-nomic-embed-text-v1.5');
    expect(s.server).toEqual({
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKeyEnv: null,
      dimensions: null,
      concurrency: 4,
      requestsPerMinute: null,
      tokensPerMinute: null,
      timeoutMs: 60_000,
      maxRetries: 5,
    });
    const e = thrown(() => resolveEmbeddingSpec('openai:text-embedding-3-small'));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toContain('embeddings.baseUrl');
  });

  it('server keys on a local model are errors, as are unknown keys', () => {
    expect(thrown(() => resolveEmbeddingSpec({ model: 'use-lite', baseUrl: 'http://x' })).message).toContain('embeddings.baseUrl');
    expect(thrown(() => resolveEmbeddingSpec({ model: 'openai:m', baseUrl: 'http://x', apiKey: 'sk-1' })).code).toBe('CONFIG_INVALID');
  });

  it('apiKeyEnv must be a variable name, so a pasted key is refused and not echoed (entry and whole config)', () => {
    const pasted = 'sk-proj-abcDEF123456';
    const e = thrown(() => resolveEmbeddingSpec({ model: 'openai:m', baseUrl: 'http://x', apiKeyEnv: pasted }));
    expect(e.message).toContain('embeddings.apiKeyEnv');
    expect(e.message).not.toContain(pasted);
    const jina = 'jina_0123abcdef'; // letters, digits and _ but lowercase: still refused
    expect(thrown(() => resolveEmbeddingSpec({ model: 'openai:m', baseUrl: 'http://x', apiKeyEnv: jina })).message).not.toContain(jina);
    const c = thrown(() =>
      parseConfig({ dataset: { path: '.' }, modes: ['semantic'], embeddings: [{ model: 'openai:m', baseUrl: 'http://x', apiKeyEnv: pasted }] }),
    );
    expect(c.code).toBe('CONFIG_INVALID');
    expect(c.message).toContain('apiKeyEnv');
    expect(c.message).not.toContain(pasted);
  });

  it('bge-*-en-v1.5 served by TEI gets the query instruction as a local bge would', () => {
    const s = resolveEmbeddingSpec({ model: 'openai:BAAI/bge-small-en-v1.5', baseUrl: 'http://127.0.0.1:8080/v1' });
    expect([s.queryPrefix, s.documentPrefix]).toEqual([BGE_QUERY_INSTRUCTION, '']);
  });
});

describe('parseEmbeddingResponse', () => {
  const item = (index: number, embedding: unknown) => ({ index, embedding });
  it('puts items back in index order', () => {
    const r = parseEmbeddingResponse({ data: [item(1, [0, 1]), item(0, [1, 0])], usage: { prompt_tokens: 3 } }, 2, 2);
    expect(r.vectors.map((v) => [...v])).toEqual([[1, 0], [0, 1]]);
    expect(r.tokens).toBe(3);
  });
  it.each([
    ['wrong count', { data: [item(0, [1, 0])] }],
    ['duplicate index', { data: [item(0, [1, 0]), item(0, [0, 1])] }],
    ['index out of range', { data: [item(0, [1, 0]), item(2, [0, 1])] }],
    ['missing index', { data: [{ embedding: [1, 0] }, item(1, [0, 1])] }],
    ['wrong dimension', { data: [item(0, [1, 0, 0]), item(1, [0, 1])] }],
    ['non-finite', { data: [item(0, [Infinity, 0]), item(1, [0, 1])] }],
    ['a string component', { data: [item(0, ['1', 0]), item(1, [0, 1])] }],
    ['no data', { object: 'error' }],
  ])('%s is an InvalidResponse', (_name, body) => {
    expect(() => parseEmbeddingResponse(body, 2, 2)).toThrow(InvalidResponse);
  });
});

describe('OpenAIProvider against the in-test server', () => {
  it('probes once at create, learns the dimension, and returns normalised vectors of the prefixed inputs', async () => {
    const { p, srv } = await provider({ queryPrefix: 'query: ', documentPrefix: 'passage: ' });
    expect(srv.requests.map((r) => r.body.input)).toEqual([[PROBE_TEXT]]);
    expect(p.dimensions).toBe(32);
    const q = await p.embedBatch(['cats'], 'query');
    const d = await p.embedBatch(['cats'], 'document');
    expectVector(q[0], expected('query: cats', 32));
    expectVector(d[0], expected('passage: cats', 32));
    expect(srv.requests[1].body).toEqual({ model: 'fake-embed', input: ['query: cats'] });
  });

  it('sends dimensions when configured and checks the length against it', async () => {
    const { p, srv } = await provider({ dimensions: 16 });
    const [v] = await p.embedBatch(['cats'], 'document');
    expect(v.length).toBe(16);
    expect(srv.requests.every((r) => r.body.dimensions === 16)).toBe(true);
  });

  it('splits into requests of batchSize and keeps input order across them', async () => {
    const texts = Array.from({ length: 70 }, (_, i) => `text number ${i} word${i % 7}`);
    const { p, srv } = await provider({ batchSize: 32, concurrency: 3 });
    const vecs = await p.embedBatch(texts, 'document');
    expect(srv.requests.slice(1).map((r) => (r.body.input as string[]).length).sort((a, b) => a - b)).toEqual([6, 32, 32]);
    vecs.forEach((v, i) => expectVector(v, expected(texts[i], 32)));
  });

  it('embedTexts with embedCallSize keeps `concurrency` requests in flight (embedTexts itself is sequential)', async () => {
    server = await startFakeServer({ dimensions: 32, faults: Array.from({ length: 12 }, () => ({ kind: 'slow', ms: 30 }) as Fault) });
    started.push(server);
    let inFlight = 0;
    let most = 0;
    const counting: typeof fetch = async (input, init) => {
      most = Math.max(most, ++inFlight);
      try {
        return await fetch(input, init);
      } finally {
        inFlight--;
      }
    };
    const spec = resolveEmbeddingSpec({ model: 'openai:fake', baseUrl: `${server.url}/v1`, batchSize: 4, concurrency: 3 });
    expect(embedCallSize(spec)).toBe(12);
    expect(embedCallSize(resolveEmbeddingSpec({ model: 'use-lite', batchSize: 4 }))).toBe(4);
    const p = await createProvider(spec, { cacheDir: tmpdir(), server: { ...quick, fetch: counting } });
    const texts = Array.from({ length: 24 }, (_, i) => `text ${i}`);
    const { vectors } = await embedTexts(p, texts, 'document', { batchSize: embedCallSize(spec) });
    vectors.forEach((v, i) => expectVector(v, expected(texts[i], 32)));
    expect(most).toBe(3);
  });

  it('a shuffled index is valid: the same vectors as in order, no retry', async () => {
    const { p } = await provider({}, [{ kind: 'shuffle' }]); // the probe is shuffled (one item: no-op)
    server!.faults.push({ kind: 'shuffle' });
    const vecs = await p.embedBatch(TEXTS, 'document');
    vecs.forEach((v, i) => expectVector(v, expected(TEXTS[i], 32)));
    expect(p.stats().retries).toBe(0);
  });

  it.each<Fault['kind']>(['wrong-count', 'duplicate-index', 'wrong-dimension', 'non-finite'])(
    '%s once is retried and gives the right vectors',
    async (kind) => {
      const { p } = await provider({});
      server!.faults.push({ kind } as Fault);
      const vecs = await p.embedBatch(TEXTS, 'document');
      vecs.forEach((v, i) => expectVector(v, expected(TEXTS[i], 32)));
      expect(p.stats().retries).toBe(1);
    },
  );

  it('a server that keeps answering with the wrong count is EMBEDDING_FAILED, never a misalignment', async () => {
    const { p } = await provider({});
    server!.faults.push({ kind: 'wrong-count' }, { kind: 'wrong-count' });
    const e = await rejection(p.embedBatch(TEXTS, 'document'));
    expect(e.code).toBe('EMBEDDING_FAILED');
  });

  it('429 with Retry-After, 500, slow, reset: retried, counted in stats with their waits', async () => {
    const waits: number[] = [];
    const opts: OpenAIProviderOptions = {
      clock: { now: () => Date.now(), sleep: async (ms) => void waits.push(ms) },
      random: () => 0,
    };
    const { p } = await provider({ timeoutMs: 200 }, [], opts);
    server!.faults.push({ kind: 'status', status: 429, retryAfter: '2' }, { kind: 'status', status: 500 }, { kind: 'slow', ms: 3000 }, { kind: 'reset' });
    const vecs = await p.embedBatch(TEXTS, 'document');
    vecs.forEach((v, i) => expectVector(v, expected(TEXTS[i], 32)));
    // random() = 0: backoff d/2 with d = 500·2^attempt → 500 (attempt 1), 1000 (attempt 2), 2000 (attempt 3)
    expect(waits).toEqual([2000, 500, 1000, 2000]);
    expect(p.stats()).toMatchObject({ requests: 1 + 5, retries: 4 });
    expect(p.stats().retryWaitSeconds).toBeCloseTo(5.5, 10);
  });

  it('counts prompt tokens from usage (the fake server counts words)', async () => {
    const { p } = await provider({});
    await p.embedBatch(['one two', 'three'], 'document');
    // probe "retrieval-sweep probe" = 3 words, then 2 + 1
    expect(p.stats().promptTokens).toBe(3 + 3);
  });

  it('a 401 fails create() with the URL, the model and the status, the remedy names apiKeyEnv, and no key', async () => {
    const KEY = 'sk-live-0123456789abcdef';
    const e = await rejection(
      provider({ apiKeyEnv: 'MY_EMBED_KEY' }, [], { ...quick, env: { MY_EMBED_KEY: KEY } }, 'sk-the-right-one'),
    );
    expect(e.code).toBe('EMBEDDING_FAILED');
    expect((e.cause as { status?: number }).status).toBe(401);
    expect(e.message).toContain(`${server!.url}/v1/embeddings`);
    expect(e.message).toContain('openai:fake-embed');
    expect(e.remedy).toContain('MY_EMBED_KEY');
    expect(`${e.format()} ${JSON.stringify(e)} ${String(e.stack)}`).not.toContain(KEY);
    expect(server!.requests).toHaveLength(1);
  });

  it('an unknown model (404) fails create() with a remedy about baseUrl and the model name', async () => {
    server = await startFakeServer({ models: ['bge-small'] });
    started.push(server);
    const spec = resolveEmbeddingSpec({ model: 'openai:bge-smal', baseUrl: `${server.url}/v1` });
    const e = await rejection(createProvider(spec, { cacheDir: tmpdir(), server: quick }));
    expect((e.cause as { status?: number }).status).toBe(404);
    expect(e.remedy).toContain('baseUrl');
  });

  it('cache keys hold base URL, model, dimensions and prefix: two servers never share vectors', async () => {
    const { p: a } = await provider({ dimensions: 16 });
    const same = await createProvider(resolveEmbeddingSpec({ model: 'openai:fake-embed', baseUrl: `${server!.url}/v1`, dimensions: 16 }), {
      cacheDir: tmpdir(),
      server: quick,
    });
    expect(same.cacheKey('document')).toBe(a.cacheKey('document'));
    const other = await createProvider(resolveEmbeddingSpec({ model: 'openai:other', baseUrl: `${server!.url}/v1`, dimensions: 16 }), {
      cacheDir: tmpdir(),
      server: quick,
    });
    expect(other.cacheKey('document')).not.toBe(a.cacheKey('document'));
    const narrower = await createProvider(resolveEmbeddingSpec({ model: 'openai:fake-embed', baseUrl: `${server!.url}/v1`, dimensions: 8 }), {
      cacheDir: tmpdir(),
      server: quick,
    });
    expect(narrower.cacheKey('document')).not.toBe(a.cacheKey('document'));
    const base = a.cacheKey('document');
    await server!.close();
    const { p: b } = await provider({ dimensions: 16 }); // another port: another base URL
    expect(b.cacheKey('document')).not.toBe(base);
    const { p: e } = await provider({ dimensions: 8, queryPrefix: 'q: ' });
    expect(e.cacheKey('query')).not.toBe(e.cacheKey('document'));
    expect(e.cacheKey('document')).toContain(server!.url);
    expect(e.cacheKey('document')).toContain('"dimensions":8');
  });

  it('a warm rerun through the cache with probe off sends no request at all', async () => {
    const cache = EmbeddingCache.open(path.join(mkdtempSync(path.join(tmpdir(), 'rs-oa-')), 'e.sqlite'));
    try {
      server = await startFakeServer({ dimensions: 32 });
      started.push(server);
      const spec = resolveEmbeddingSpec({ model: 'openai:fake', baseUrl: `${server.url}/v1`, dimensions: 32 });
      const cold = await createProvider(spec, { cacheDir: tmpdir(), server: { ...quick, probe: false } });
      const first = await embedTexts(cold, TEXTS, 'document', { cache, batchSize: 2 });
      const sent = server.requests.length;
      expect(sent).toBe(3); // 5 texts in requests of 2, no probe
      const warm = await createProvider(spec, { cacheDir: tmpdir(), server: { ...quick, probe: false } });
      const again = await embedTexts(warm, TEXTS, 'document', { cache, batchSize: 2 });
      expect(server.requests.length).toBe(sent);
      expect(again.stats.cacheHits).toBe(5);
      again.vectors.forEach((v, i) => expect([...v]).toEqual([...first.vectors[i]]));
    } finally {
      cache.close();
    }
  });
});
