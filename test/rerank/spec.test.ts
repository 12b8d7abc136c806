import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defaultRerankLabel,
  rerankEntrySchema,
  resolveRerankList,
  resolveRerankSpec,
} from '../../src/rerank/spec.js';
import { thrown } from '../helpers/errors.js';

describe('rerank entry: written forms and defaults', () => {
  it('none resolves to null', () => {
    expect(resolveRerankSpec('none')).toBeNull();
  });

  it('a transformers: folder gets the local defaults (batchSize 16, maxLength 512, allowRemote false, fp32)', () => {
    expect(resolveRerankSpec({ model: 'transformers:./models/ms-marco-MiniLM-L-6-v2', depth: [20, 50] })).toEqual({
      model: 'transformers:./models/ms-marco-MiniLM-L-6-v2',
      label: 'ms-marco-MiniLM-L-6-v2',
      depth: [20, 50],
      batchSize: 16,
      concurrency: 4,
      timeoutMs: 30000,
      maxLength: 512,
      allowRemote: false,
      dtype: 'fp32',
    });
  });

  it('a rerank: server gets the server defaults (batchSize 32) and its base URL without a trailing slash', () => {
    expect(resolveRerankSpec({ model: 'rerank:bge-reranker-base', baseUrl: 'http://127.0.0.1:8081/', protocol: 'tei', depth: 20 })).toEqual({
      model: 'rerank:bge-reranker-base',
      label: 'bge-reranker-base',
      depth: [20],
      batchSize: 32,
      concurrency: 4,
      timeoutMs: 30000,
      baseUrl: 'http://127.0.0.1:8081',
      protocol: 'tei',
    });
    const c = resolveRerankSpec({ model: 'rerank:rerank-english-v3.0', baseUrl: 'https://api.cohere.com', protocol: 'cohere', apiKeyEnv: 'COHERE_API_KEY', depth: 10, label: 'cohere-v3' })!;
    expect(c).toMatchObject({ apiKeyEnv: 'COHERE_API_KEY', label: 'cohere-v3', protocol: 'cohere' });
  });

  it('labels: last path part, filename-safe', () => {
    expect(defaultRerankLabel('transformers:cross-encoder/ms-marco-MiniLM-L-6-v2')).toBe('ms-marco-MiniLM-L-6-v2');
    expect(defaultRerankLabel('transformers:./models/my model (v2)/')).toBe('my-model-v2');
    expect(defaultRerankLabel('rerank:BAAI/bge-reranker-base')).toBe('bge-reranker-base');
    expect(defaultRerankLabel('transformers:./')).toBe('model');
  });

  it('the schema is usable for the config and its JSON Schema', () => {
    expect(rerankEntrySchema.safeParse('none').success).toBe(true);
    expect(rerankEntrySchema.safeParse({ model: 'transformers:x', depth: 5 }).success).toBe(true);
    expect(JSON.stringify(z.toJSONSchema(rerankEntrySchema))).toContain('"depth"');
  });
});

describe('rerank entry errors name the key path and the value', () => {
  const err = (entry: unknown): string => {
    const e = thrown(() => resolveRerankSpec(entry, 'rerank[1]'));
    expect(e.code).toBe('CONFIG_INVALID');
    return e.message;
  };

  it('an unknown key is an error naming the key', () => {
    expect(err({ model: 'transformers:./m', depth: 5, topN: 3 })).toContain('rerank[1].topN: unknown key');
  });

  it('depth must be whole numbers ≥ 1, listed once', () => {
    expect(err({ model: 'transformers:./m', depth: 0 })).toContain('rerank[1].depth');
    expect(err({ model: 'transformers:./m', depth: 2.5 })).toContain('rerank[1].depth');
    expect(err({ model: 'transformers:./m', depth: [10, 10] })).toContain('lists a depth twice');
    expect(err({ model: 'transformers:./m', depth: [] })).toContain('rerank[1].depth');
    expect(err({ model: 'transformers:./m' })).toContain('rerank[1].depth');
  });

  it('rerank: models need baseUrl and protocol (both reported at once)', () => {
    const m = err({ model: 'rerank:bge-reranker-base', depth: 20 });
    expect(m).toContain('rerank[1].baseUrl: is required');
    expect(m).toContain('rerank[1].protocol: is required');
    expect(err({ model: 'rerank:x', depth: 1, baseUrl: 'localhost:8081', protocol: 'tei' })).toContain('rerank[1].baseUrl');
    expect(err({ model: 'rerank:x', depth: 1, baseUrl: 'http://h', protocol: 'openai' })).toContain('rerank[1].protocol');
  });

  it('transformers: models must not have server fields, and rerank: models no local ones', () => {
    expect(err({ model: 'transformers:./m', depth: 5, baseUrl: 'http://127.0.0.1:8081', protocol: 'tei' })).toMatch(
      /rerank\[1\]\.baseUrl: applies only to rerank:.*rerank\[1\]\.protocol: applies only to rerank:/,
    );
    expect(err({ model: 'transformers:./m', depth: 5, timeoutMs: 100 })).toContain('rerank[1].timeoutMs');
    expect(err({ model: 'rerank:x', depth: 5, baseUrl: 'http://h', protocol: 'tei', maxLength: 256 })).toContain('rerank[1].maxLength: applies only to transformers:');
  });

  it('a model that is neither transformers: nor rerank:, and a bare model string, are errors', () => {
    expect(err({ model: 'cross-encoder/ms-marco', depth: 5 })).toContain('rerank[1].model');
    expect(err({ model: 'transformers:', depth: 5 })).toContain('rerank[1].model');
    expect(err('transformers:./m')).toContain('{ model: "transformers:./m", depth: 20 }');
    expect(err(42)).toContain('rerank[1]');
  });

  it('two entries with the same label are an error naming both', () => {
    const e = thrown(() =>
      resolveRerankList([
        'none',
        { model: 'transformers:./a/minilm', depth: 5 },
        { model: 'transformers:./b/minilm', depth: 10 },
      ]),
    );
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toContain('rerank[2]: label "minilm" is already used by rerank[1]');
    expect(resolveRerankList(['none', { model: 'transformers:./a/minilm', depth: 5 }])).toHaveLength(2);
  });
});
