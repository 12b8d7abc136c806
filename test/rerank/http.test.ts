import { afterEach, describe, expect, it } from 'vitest';
import { createHttpReranker, parseRerankResponse, rerankPath, type HttpRerankerOptions } from '../../src/rerank/http.js';
import type { RerankSpec } from '../../src/rerank/types.js';
import { InvalidResponse } from '../../src/net/http.js';
import { fakeRerankScore, startFakeServer, type FakeServer, type Fault } from '../helpers/fake-server.js';
import { rejection } from '../helpers/errors.js';

const quick: HttpRerankerOptions = { clock: { now: () => Date.now(), sleep: async () => {} }, random: () => 0.5 };
const started: FakeServer[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) await s.close();
});

function spec(url: string, protocol: 'tei' | 'cohere', extra: Partial<RerankSpec> = {}): RerankSpec {
  return {
    model: 'rerank:bge-reranker-base',
    label: 'bge-reranker-base',
    depth: [20],
    baseUrl: url,
    protocol,
    batchSize: 4,
    concurrency: 2,
    timeoutMs: 2_000,
    ...extra,
  };
}

async function server(faults: Fault[] = [], apiKey?: string): Promise<FakeServer> {
  const s = await startFakeServer({ faults, ...(apiKey !== undefined ? { apiKey } : {}) });
  started.push(s);
  return s;
}

const QUERY = 'how do cats hunt mice';
const TEXTS = [
  'stock markets fell today',
  'cats hunt mice at night',
  'mice are small',
  'a recipe for bread',
  'how cats hunt: a field guide to cats and mice',
  'dogs do not hunt mice',
  'the end',
];
const WANT = TEXTS.map((t) => fakeRerankScore(QUERY, t));

describe('parseRerankResponse and paths', () => {
  it('TEI answers sorted by score come back in index order', () => {
    expect(parseRerankResponse([{ index: 1, score: 0.9 }, { index: 0, score: 0.1 }], 'tei', 2)).toEqual([0.1, 0.9]);
  });
  it('Cohere answers use relevance_score', () => {
    expect(parseRerankResponse({ results: [{ index: 1, relevance_score: 2 }, { index: 0, relevance_score: -1 }] }, 'cohere', 2)).toEqual([-1, 2]);
  });
  it.each([
    ['wrong count', [{ index: 0, score: 1 }]],
    ['duplicate index', [{ index: 0, score: 1 }, { index: 0, score: 2 }]],
    ['non-finite', [{ index: 0, score: Infinity }, { index: 1, score: 2 }]],
    ['the Cohere field under TEI', [{ index: 0, relevance_score: 1 }, { index: 1, relevance_score: 2 }]],
  ])('TEI %s is an InvalidResponse', (_n, body) => {
    expect(() => parseRerankResponse(body, 'tei', 2)).toThrow(InvalidResponse);
  });
  it('cohere appends /v1/rerank unless the base URL already names a version', () => {
    expect(rerankPath('cohere', 'https://api.cohere.com')).toBe('/v1/rerank');
    expect(rerankPath('cohere', 'https://api.jina.ai/v1/')).toBe('/rerank');
    expect(rerankPath('cohere', 'https://api.cohere.com/v2')).toBe('/rerank');
    expect(rerankPath('tei', 'http://127.0.0.1:8081')).toBe('/rerank');
  });
});

describe.each(['tei', 'cohere'] as const)('createHttpReranker, protocol %s, against the in-test server', (protocol) => {
  it('probes once, then scores every text in input order, batchSize texts per request', async () => {
    const s = await server();
    const r = await createHttpReranker(spec(s.url, protocol), quick);
    expect(s.requests).toHaveLength(1);
    const got = await r.score(QUERY, TEXTS);
    got.forEach((x, i) => expect(x).toBeCloseTo(WANT[i], 12));
    // 7 texts, batchSize 4 → requests of 4 and 3
    const sizes = s.requests.slice(1).map((q) => ((protocol === 'tei' ? q.body.texts : q.body.documents) as string[]).length);
    expect(sizes.sort()).toEqual([3, 4]);
    expect(s.requests[1].path).toBe(protocol === 'tei' ? '/rerank' : '/v1/rerank');
    if (protocol === 'cohere') expect(s.requests[1].body.model).toBe('bge-reranker-base');
    expect(r.stats()).toMatchObject({ requests: 3, retries: 0, pairs: 1 + 7 });
    expect(await r.score(QUERY, [])).toEqual([]);
  });

  it('survives 429 + Retry-After, 500, slow, reset, wrong count and a shuffled index with the same scores', async () => {
    const s = await server();
    const waits: number[] = [];
    const r = await createHttpReranker(spec(s.url, protocol, { timeoutMs: 200, batchSize: 100, concurrency: 1 }), {
      clock: { now: () => Date.now(), sleep: async (ms) => void waits.push(ms) },
      random: () => 0,
      maxRetries: 10,
    });
    s.faults.push(
      { kind: 'status', status: 429, retryAfter: '3' },
      { kind: 'status', status: 500 },
      { kind: 'slow', ms: 3_000 },
      { kind: 'reset' },
      { kind: 'wrong-count' },
      { kind: 'shuffle' },
    );
    const got = await r.score(QUERY, TEXTS);
    got.forEach((x, i) => expect(x).toBeCloseTo(WANT[i], 12));
    // shuffle is valid: five retries; Retry-After 3 s, then backoff 500·2^a/2 for a = 1..4
    expect(r.stats()).toMatchObject({ retries: 5 });
    expect(waits).toEqual([3000, 500, 1000, 2000, 4000]);
    expect(r.stats().retryWaitSeconds).toBeCloseTo(10.5, 10);
  });

  it('a consistently wrong count is RERANK_FAILED', async () => {
    const s = await server();
    const r = await createHttpReranker(spec(s.url, protocol), quick);
    s.faults.push({ kind: 'wrong-count' }, { kind: 'wrong-count' });
    const e = await rejection(r.score(QUERY, TEXTS.slice(0, 3)));
    expect(e.code).toBe('RERANK_FAILED');
  });

  it('a 401 fails creation with URL, model and remedy naming apiKeyEnv; the key is in no message', async () => {
    const KEY = 'jina_live_abcdef0123456789';
    const s = await server([], 'the-right-key');
    const e = await rejection(createHttpReranker(spec(s.url, protocol, { apiKeyEnv: 'RERANK_KEY' }), { ...quick, env: { RERANK_KEY: KEY } }));
    expect(e.code).toBe('RERANK_FAILED');
    expect((e.cause as { status?: number }).status).toBe(401);
    expect(e.message).toContain(s.url);
    expect(e.message).toContain('rerank:bge-reranker-base');
    expect(e.remedy).toContain('RERANK_KEY');
    expect(`${e.format()} ${JSON.stringify(e)} ${String(e.stack)}`).not.toContain(KEY);
    expect(s.requests[0].authorization).toBe(`Bearer ${KEY}`);
  });
});

describe('createHttpReranker config errors', () => {
  it('missing baseUrl or protocol, or a non-rerank: model, is CONFIG_INVALID with the key path', async () => {
    const base = spec('http://127.0.0.1:9', 'tei');
    const { baseUrl: _b, ...noUrl } = base;
    expect((await rejection(createHttpReranker(noUrl as RerankSpec, quick))).location.path).toBe('rerank.baseUrl');
    const { protocol: _p, ...noProtocol } = base;
    expect((await rejection(createHttpReranker(noProtocol as RerankSpec, quick))).location.path).toBe('rerank.protocol');
    expect((await rejection(createHttpReranker({ ...base, model: 'bge-reranker-base' }, quick))).location.path).toBe('rerank.model');
  });

  it('cache keys differ by protocol, base URL and model', async () => {
    const s = await server();
    const a = await createHttpReranker(spec(s.url, 'tei'), { ...quick, probe: false });
    const b = await createHttpReranker(spec(s.url, 'cohere'), { ...quick, probe: false });
    const c = await createHttpReranker(spec(`${s.url}/x`, 'tei'), { ...quick, probe: false });
    const d = await createHttpReranker({ ...spec(s.url, 'tei'), model: 'rerank:other' }, { ...quick, probe: false });
    const keys = [a, b, c, d].map((r) => r.cacheKey());
    expect(new Set(keys).size).toBe(4);
    expect(s.requests).toHaveLength(0);
  });
});
