/**
 * embedCallSize: texts per embedTexts batch for a spec. Server models multiply by their concurrency; glove-100d, whose
 * vectors do not depend on batching, takes at least MIN_CALL_TEXTS['glove-100d'] (256) texts a call.
 */
import { describe, expect, it } from 'vitest';
import { MIN_CALL_TEXTS, embedCallSize, resolveEmbeddingSpec } from '../../src/embed/spec.js';

describe('embedCallSize', () => {
  it('glove-100d: at least 256 texts a call, more when batchSize asks for more', () => {
    expect(MIN_CALL_TEXTS['glove-100d']).toBe(256);
    expect(embedCallSize(resolveEmbeddingSpec('glove-100d'))).toBe(256); // default batchSize 32 → 256
    expect(embedCallSize(resolveEmbeddingSpec({ model: 'glove-100d', batchSize: 8 }))).toBe(256);
    expect(embedCallSize(resolveEmbeddingSpec({ model: 'glove-100d', batchSize: 1000 }))).toBe(1000);
  });

  it('other local models: batchSize as written', () => {
    expect(embedCallSize(resolveEmbeddingSpec({ model: 'use-lite', batchSize: 4 }))).toBe(4);
    expect(embedCallSize(resolveEmbeddingSpec('use-lite'))).toBe(32);
  });

  it('server models: batchSize × concurrency', () => {
    const spec = resolveEmbeddingSpec({ model: 'openai:m', baseUrl: 'http://127.0.0.1:8080/v1', batchSize: 3, concurrency: 4 });
    expect(embedCallSize(spec)).toBe(3 * 4);
  });
});
