import { afterEach, describe, expect, it } from 'vitest';
import {
  backoffMs,
  HttpClient,
  HttpFailure,
  InvalidResponse,
  parseRetryAfter,
  redact,
  type HttpClientOptions,
  type HttpClock,
} from '../../src/net/http.js';
import { startFakeServer, type FakeServer, type Fault } from '../helpers/fake-server.js';
import { rejection } from '../helpers/errors.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** A clock whose sleep advances time at once and records each wait. */
function fakeClock(): HttpClock & { waits: number[] } {
  let now = T0;
  const waits: number[] = [];
  return {
    waits,
    now: () => now,
    sleep: async (ms) => {
      waits.push(ms);
      now += ms;
    },
  };
}

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Parses an embeddings answer into its item count; throws InvalidResponse when the count is not `n`. */
function countOf(n: number) {
  return (json: unknown): number => {
    const data = (json as { data: unknown[] }).data;
    if (data.length !== n) throw new InvalidResponse(`got ${data.length} items for ${n}`);
    return data.length;
  };
}

async function setup(faults: Fault[], extra: Partial<HttpClientOptions> = {}, apiKey?: string) {
  server = await startFakeServer({ faults, ...(apiKey !== undefined ? { apiKey } : {}) });
  const clock = fakeClock();
  const client = new HttpClient({
    baseUrl: `${server.url}/v1/`,
    what: 'openai:fake',
    errorCode: 'EMBEDDING_FAILED',
    configPath: 'embeddings',
    clock,
    random: () => 0.5,
    timeoutMs: 2_000,
    ...extra,
  });
  const post = () => client.postJson('/embeddings', { model: 'fake', input: ['a b', 'c'] }, { parse: countOf(2) });
  return { client, clock, post, srv: server };
}

describe('parseRetryAfter and backoff (pure)', () => {
  it('reads integer seconds and HTTP-dates; a past date is 0; junk is undefined', () => {
    expect(parseRetryAfter('7', T0)).toBe(7000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:03 GMT', T0)).toBe(3000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', T0)).toBe(0);
    expect(parseRetryAfter('soon', T0)).toBeUndefined();
    expect(parseRetryAfter(null, T0)).toBeUndefined();
  });

  it('equal jitter: d/2 + r·d/2 with d = min(max, base·2^attempt)', () => {
    expect(backoffMs(0, 500, 30_000, () => 0.5)).toBe(250 + 0.5 * 250);
    expect(backoffMs(3, 500, 30_000, () => 0)).toBe((500 * 8) / 2);
    expect(backoffMs(10, 500, 30_000, () => 1)).toBe(30_000);
  });

  it('redact replaces every occurrence and leaves text alone without a secret', () => {
    expect(redact('key sk-1 and sk-1', 'sk-1')).toBe('key *** and ***');
    expect(redact('key sk-1', undefined)).toBe('key sk-1');
    expect(redact('key sk-1', '')).toBe('key sk-1');
  });
});

describe('HttpClient retries against a real local server', () => {
  it('honours Retry-After seconds on 429: waits exactly 7 s (fake clock), then succeeds', async () => {
    const { client, clock, post } = await setup([{ kind: 'status', status: 429, retryAfter: '7' }]);
    expect(await post()).toBe(2);
    expect(clock.waits).toEqual([7000]);
    expect(client.stats()).toEqual({ requests: 2, retries: 1, retryWaitSeconds: 7, throttleWaitSeconds: 0 });
  });

  it('honours an HTTP-date Retry-After on 503', async () => {
    const { clock, post } = await setup([{ kind: 'status', status: 503, retryAfter: 'Thu, 01 Jan 2026 00:00:03 GMT' }]);
    await post();
    expect(clock.waits).toEqual([3000]);
  });

  it('backs off exponentially with jitter on 500s without Retry-After', async () => {
    const { client, clock, post } = await setup([
      { kind: 'status', status: 500 },
      { kind: 'status', status: 502 },
    ]);
    expect(await post()).toBe(2);
    // random() = 0.5: attempt 0 → 250 + 125, attempt 1 → 500 + 250
    expect(clock.waits).toEqual([375, 750]);
    expect(client.stats().retryWaitSeconds).toBeCloseTo(1.125, 10);
  });

  it('does not retry a 400: one request, the status in the cause', async () => {
    const { client, post } = await setup([{ kind: 'status', status: 400 }]);
    const e = await rejection(post());
    expect(e.code).toBe('EMBEDDING_FAILED');
    expect((e.cause as HttpFailure).status).toBe(400);
    expect(e.message).toContain('/v1/embeddings');
    expect(client.stats().requests).toBe(1);
  });

  it('retries a response slower than timeoutMs', async () => {
    const { client, srv, post } = await setup([{ kind: 'slow', ms: 5_000 }], { timeoutMs: 150 });
    expect(await post()).toBe(2);
    expect(srv.requests.map((r) => r.fault)).toEqual(['slow', undefined]);
    expect(client.stats().retries).toBe(1);
  });

  it('a timeout on the last allowed attempt is an error of kind timeout', async () => {
    const { post } = await setup([{ kind: 'slow', ms: 5_000 }], { timeoutMs: 150, maxRetries: 0 });
    const e = await rejection(post());
    expect((e.cause as HttpFailure).kind).toBe('timeout');
  });

  it('retries a connection reset by the server', async () => {
    const { client, srv, post } = await setup([{ kind: 'reset' }]);
    expect(await post()).toBe(2);
    expect(srv.requests.map((r) => r.fault)).toEqual(['reset', undefined]);
    expect(client.stats().retries).toBe(1);
  });

  it('a refused connection is not retried and says to start the server', async () => {
    const dead = await startFakeServer();
    const url = dead.url;
    await dead.close();
    const client = new HttpClient({ baseUrl: url, what: 'x', errorCode: 'RERANK_FAILED', configPath: 'rerank', clock: fakeClock() });
    const e = await rejection(client.postJson('/rerank', {}, { parse: (j) => j }));
    expect(e.code).toBe('RERANK_FAILED');
    expect((e.cause as HttpFailure).errno).toBe('ECONNREFUSED');
    expect(client.stats()).toMatchObject({ requests: 1, retries: 0 });
    expect(e.remedy).toContain('start the server');
  });

  it('gives up after maxRetries retryable failures (maxRetries + 1 requests)', async () => {
    const f: Fault = { kind: 'status', status: 503 };
    const { client, post } = await setup([f, f, f, f], { maxRetries: 2 });
    const e = await rejection(post());
    expect((e.cause as HttpFailure).status).toBe(503);
    expect(client.stats()).toMatchObject({ requests: 3, retries: 2 });
  });

  it('retries a malformed answer once (invalidRetries 1), then fails with kind invalid', async () => {
    const once = await setup([{ kind: 'wrong-count' }]);
    expect(await once.post()).toBe(2);
    await once.srv.close();
    const twice = await setup([{ kind: 'wrong-count' }, { kind: 'wrong-count' }]);
    const e = await rejection(twice.post());
    expect((e.cause as HttpFailure).kind).toBe('invalid');
    expect(twice.client.stats()).toMatchObject({ requests: 2, retries: 1 });
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    server = await startFakeServer({ faults: [{ kind: 'slow', ms: 40 }, { kind: 'slow', ms: 40 }, { kind: 'slow', ms: 40 }] });
    let inFlight = 0;
    let most = 0;
    const counting: typeof fetch = async (input, init) => {
      inFlight++;
      most = Math.max(most, inFlight);
      try {
        return await fetch(input, init);
      } finally {
        inFlight--;
      }
    };
    const client = new HttpClient({ baseUrl: server.url, what: 'x', errorCode: 'EMBEDDING_FAILED', configPath: 'e', concurrency: 2, fetch: counting });
    const all = await Promise.all(
      Array.from({ length: 6 }, () => client.postJson('/v1/embeddings', { input: ['a'] }, { parse: countOf(1) })),
    );
    expect(all).toEqual([1, 1, 1, 1, 1, 1]);
    expect(most).toBe(2);
  });

  it('requestsPerMinute 2: the 3rd and 5th of 5 requests wait for the 60 s window (fake clock)', async () => {
    const { client, clock } = await setup([], { requestsPerMinute: 2 });
    for (let i = 0; i < 5; i++) await client.postJson('/embeddings', { input: ['a'] }, { parse: countOf(1) });
    expect(clock.waits).toEqual([60_000, 60_000]);
    expect(client.stats().throttleWaitSeconds).toBe(120);
  });

  it('tokensPerMinute counts the usage the server reported, not the estimate', async () => {
    const { client, clock } = await setup([], { tokensPerMinute: 10 });
    const call = () =>
      client.postJson('/embeddings', { input: ['one two three four'] }, {
        parse: (j) => (j as { usage: { total_tokens: number } }).usage.total_tokens,
        tokens: 1, // a deliberately low estimate: the reported 4 tokens replace it
        usedTokens: (t) => t,
      });
    await call(); // 4 used
    await call(); // 8 used
    expect(clock.waits).toEqual([]);
    await call(); // 8 + 1 estimated fits: no wait either
    await call(); // 12 + 1 > 10: waits for the window
    expect(clock.waits).toEqual([60_000]);
  });
});

describe('API key: read from the environment, sent as Bearer, redacted everywhere', () => {
  const KEY = 'sk-test-7f3a9c1e5b';

  it('sends Authorization: Bearer <key> from the named variable', async () => {
    const { srv, post } = await setup([], { apiKeyEnv: 'FAKE_KEY', env: { FAKE_KEY: KEY } }, KEY);
    await post();
    expect(srv.requests[0].authorization).toBe(`Bearer ${KEY}`);
  });

  it('a 401 whose body echoes the key: not retried, the key in no message, remedy names the variable', async () => {
    const { client, post } = await setup([], { apiKeyEnv: 'FAKE_KEY', env: { FAKE_KEY: KEY } }, 'sk-other');
    const e = await rejection(post());
    expect((e.cause as HttpFailure).status).toBe(401);
    expect(client.stats().requests).toBe(1);
    const everything = [e.message, e.format(), e.remedy, (e.cause as Error).message, JSON.stringify(e), String(e.stack)].join('\n');
    expect(everything).not.toContain(KEY);
    expect(e.message).toContain('***'); // the echoed key was there and was redacted
    expect(e.remedy).toContain('FAKE_KEY');
  });

  it('an unset key variable fails at construction, naming the variable', () => {
    let err: unknown;
    try {
      new HttpClient({ baseUrl: 'http://127.0.0.1:9', what: 'x', errorCode: 'EMBEDDING_FAILED', configPath: 'embeddings', apiKeyEnv: 'NOPE_KEY', env: {} });
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code).toBe('EMBEDDING_FAILED');
    expect((err as { location?: { path?: string } }).location?.path).toBe('embeddings.apiKeyEnv');
  });

  it('a base URL without http(s) is CONFIG_INVALID', () => {
    let err: unknown;
    try {
      new HttpClient({ baseUrl: '127.0.0.1:8080', what: 'x', errorCode: 'EMBEDDING_FAILED', configPath: 'embeddings' });
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code).toBe('CONFIG_INVALID');
  });
});
