/**
 * Issue 24 §2: the HTTP layer reads a response body incrementally and stops at `maxResponseBytes`, with an error that
 * says the body was too large and names the limit (never retried); a baseUrl on a port fetch refuses is a config error.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_MAX_RESPONSE_BYTES, HttpClient } from '../../src/net/http.js';
import { rejection } from '../helpers/errors.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

/** A server on 127.0.0.1 answering every POST with `bytes` bytes of a JSON string, chunked or with Content-Length. */
async function serve(bytes: number, chunked: boolean): Promise<string> {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = Buffer.from(JSON.stringify('x'.repeat(bytes - 2)));
      res.writeHead(200, chunked ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', 'content-length': String(body.length) });
      // Several writes, so a chunked answer arrives in parts.
      for (let i = 0; i < body.length; i += 256) res.write(body.subarray(i, i + 256));
      res.end();
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

function client(baseUrl: string, maxResponseBytes?: number): HttpClient {
  return new HttpClient({
    baseUrl,
    what: 'openai:m',
    errorCode: 'EMBEDDING_FAILED',
    configPath: 'embeddings',
    ...(maxResponseBytes !== undefined ? { maxResponseBytes } : {}),
    clock: { now: () => 0, sleep: async () => {} },
  });
}

describe('response bodies are capped (maxResponseBytes)', () => {
  it('the default cap is 256 MiB (2 x a 2,048 x 3,072 JSON embedding answer of ~20 bytes a number)', () => {
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBe(256 * 1024 * 1024);
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBeGreaterThan(2 * 2048 * 3072 * 20);
  });

  it('a body within the cap is read whole', async () => {
    const url = await serve(1000, true);
    const c = client(url, 1000);
    expect(await c.postJson('/x', {}, { parse: (j) => (j as string).length })).toBe(1000 - 2);
  });

  for (const chunked of [true, false]) {
    it(`a ${chunked ? 'chunked' : 'Content-Length'} body over the cap fails once, saying it was too large and naming the limit`, async () => {
      const url = await serve(5000, chunked);
      const c = client(url, 1000);
      const e = await rejection(c.postJson('/x', {}, { parse: (j) => j }));
      expect(e.code).toBe('EMBEDDING_FAILED');
      expect(e.message).toMatch(/the response body was too large: .* more than the limit of 1000 bytes \(maxResponseBytes\)/);
      expect(e.remedy).toMatch(/lower batchSize.*embeddings\.maxResponseBytes/);
      expect(c.stats().requests).toBe(1); // not retried
    });
  }

  it('a client with one input per request (chat: batchKey null) names no batchSize in its remedies', async () => {
    const url = await serve(5000, true);
    const c = new HttpClient({
      baseUrl: url,
      what: 'chat:m',
      errorCode: 'LLM_FAILED',
      configPath: 'model',
      maxResponseBytes: 1000,
      batchKey: null,
      clock: { now: () => 0, sleep: async () => {} },
    });
    const e = await rejection(c.postJson('/x', {}, { parse: (j) => j }));
    expect(e.code).toBe('LLM_FAILED');
    expect(e.remedy).not.toMatch(/batchSize/);
    expect(e.remedy).toMatch(/more than 1000 bytes for one prompt/);
  });

  it('maxResponseBytes below 1 is CONFIG_INVALID', () => {
    expect(() => client('http://127.0.0.1:8080', 0)).toThrow(/maxResponseBytes \(0\) must be a whole number/);
  });
});

describe('bad ports', () => {
  it('a baseUrl on a port fetch refuses (1) is CONFIG_INVALID naming the port, before any request', () => {
    let err: unknown;
    try {
      client('http://127.0.0.1:1/v1');
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'CONFIG_INVALID' });
    expect((err as Error).message).toMatch(/uses port 1, which fetch refuses/);
  });
});
